"""GLM-5 (issue 24, cases 2360-…): the cases of ``glm5.py`` on GLM-5's own chat template (see
there; one server, ``glm-5``)."""

from __future__ import annotations

from record_tool_fixtures import Format

from tool_cases.glm5 import TOOLS, USER, glm5_cases, servers

FORMAT = Format(2360, servers(("glm-5",)), glm5_cases("glm-5"), tools=TOOLS, user=USER)
