"""GLM-5.2 (issue 24, cases 2340-2357): the cases of ``glm5.py`` on GLM-5.2's chat template
(see there; one server, ``glm-5.2``)."""

from __future__ import annotations

from record_tool_fixtures import Format

from tool_cases.glm5 import TOOLS, USER, glm5_cases, servers

FORMAT = Format(2340, servers(("glm-5.2",)), glm5_cases("glm-5.2"), tools=TOOLS, user=USER)
