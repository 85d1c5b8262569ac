"""`qwen` played by the scripted fakes, one command for every use of it:
with `--acp` the scripted ACP agent (fake_acp_agent.py), otherwise the
scripted stream-json CLI (fake_stream_cli.py). Both read the same SCRIPT
(the agent its "turns" and "state", the CLI its "steps").

    python scripted_qwen.py SCRIPT.json [FLAGS...]
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    fake = "fake_acp_agent.py" if "--acp" in sys.argv[2:] else "fake_stream_cli.py"
    runpy.run_path(str(HERE / fake), run_name="__main__")


if __name__ == "__main__":
    main()
