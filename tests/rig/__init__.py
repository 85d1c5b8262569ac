"""Test rig for the real Qwen Code CLI: ``fake_model`` (a scripted
OpenAI-compatible model server) and ``qwen_cli`` (install lookup, isolated
HOME/env, ``qwen -p`` runs and the TUI driven through tmux).
The CLI itself is installed by ``install-cli.sh`` into ``.cache/qwen-cli``."""
