"""What the simulator lets go of, as Sublime does: a long run (the bench, the
headless driver) must not keep closed views' texts or every command's arguments."""

from __future__ import annotations

from tests.sublime_sim import SimulatedHost
from tests.sublime_sim._app import COMMAND_LOG_LENGTH, RECORDED_TEXT_LIMIT
from tests.sublime_sim.sublime import PhantomLayout, Region


def test_a_closed_view_drops_its_text_phantoms_and_callbacks(sim_host: SimulatedHost) -> None:
    view = sim_host.user.new_file()
    view.set_scratch(True)
    sim_host.user.type(view, "text " * 1000)
    view.set_reference_document("reference")
    calls: list[str] = []
    view.add_phantom("key", Region(0), "<b>x</b>", PhantomLayout.BLOCK, calls.append)
    state = sim_host.view_state(view)
    buffer = state.buffer

    sim_host.user.close(view)
    sim_host.wait_idle()
    assert not view.is_valid() and view.substr(Region(0, 10)) == "" and view.size() == 0
    assert buffer.text == "" and buffer.reference_document is None and buffer.change_log == []
    assert state.phantoms == {} and state.regions == {}


def test_the_command_log_records_long_texts_by_length_and_forgets_old_commands(sim_host: SimulatedHost) -> None:
    view = sim_host.user.new_file()
    view.run_command("append", {"characters": "x" * (RECORDED_TEXT_LIMIT + 1)})
    view.run_command("append", {"characters": "short"})
    last = [c for c in sim_host.commands if c.name == "append"]
    assert last[-2].args == {"characters": f"<{RECORDED_TEXT_LIMIT + 1} characters>"}
    assert last[-1].args == {"characters": "short"}
    assert view.size() == RECORDED_TEXT_LIMIT + 1 + 5  # only the record is shortened

    for _ in range(COMMAND_LOG_LENGTH):
        view.run_command("noop_command_for_the_log")
    assert len(sim_host.commands) == COMMAND_LOG_LENGTH
    assert all(c.name == "noop_command_for_the_log" for c in sim_host.commands)
