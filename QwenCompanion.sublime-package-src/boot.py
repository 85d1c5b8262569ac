"""Sublime Text loads this module: it holds the package's commands, listeners
and the plugin_loaded / plugin_unloaded hooks."""

from __future__ import annotations

import logging
import sys

import sublime

# Sublime's reload, disable/enable and Package Control's upgrade re-import only
# this module; the package's other modules would stay cached with the state
# (and, after an upgrade, the code) of the unloaded version. Forget them so
# the imports below load them anew.
for _cached in [name for name in sys.modules if name.startswith(f"{__package__}.") and name != __name__]:
    del sys.modules[_cached]

from .core import threads
from .core.type_caches import forget_types_of
from .plugin import log, wiring
from .plugin.actions.action_commands import QwenActionCommand, QwenAnswerHistoryCommand, QwenCancelActionCommand
from .plugin.actions.action_listeners import ActionsListener
from .plugin.actions.jobs import actions
from .plugin.actions.models import QwenChooseActionModelCommand
from .plugin.actions.send_to_terminal import QwenSendSelectionToTerminalCommand
from .plugin.chat.agent.mcp_servers_command import QwenChatMcpServersCommand
from .plugin.chat.agent.prestart import prestart_all
from .plugin.chat.agent.serve_daemon import sweep_serve_daemons
from .plugin.chat.chat_commands import (
    QwenChatCancelCommand,
    QwenChatCommand,
    QwenChatCycleModeCommand,
    QwenChatModeCommand,
    QwenChatModelCommand,
    QwenChatNewCommand,
    QwenChatSessionOptionsCommand,
    QwenChatShowAgentLogCommand,
    QwenServeStopCommand,
)
from .plugin.chat.chat_listener import ChatListener
from .plugin.chat.comments.comment_commands import (
    QwenCommentAddCommand,
    QwenCommentDeleteCommand,
    QwenCommentEditCommand,
    QwenCommentsListCommand,
    QwenReviewSendCommand,
)
from .plugin.chat.comments.comment_marks import CommentEditsListener, CommentMarksListener
from .plugin.chat.history.branch_commands import QwenChatBranchCommand, QwenChatBranchMenuCommand
from .plugin.chat.history.continue_commands import QwenChatContinueInTerminalCommand
from .plugin.chat.history.export_commands import QwenChatCopyCommand, QwenChatExportCommand
from .plugin.chat.history.history_commands import QwenChatSessionsCommand
from .plugin.chat.history.rewind_commands import (
    QwenChatEditPromptCommand,
    QwenChatPromptMenuCommand,
    QwenChatRewindCommand,
)
from .plugin.chat.history.turn_review import (
    QwenTurnChangesAtCaretCommand,
    QwenTurnChangesCommand,
    QwenTurnKeepCommand,
    QwenTurnUndoCommand,
    TurnReferenceListener,
)
from .plugin.chat.offers.asides import QwenChatAskAsideCommand
from .plugin.chat.offers.memory_commands import (
    QwenChatForgetCommand,
    QwenChatOpenMemoryCommand,
    QwenChatRememberCommand,
)
from .plugin.chat.offers.recap_commands import QwenChatNewFromSummaryCommand, QwenChatSummarizeCommand
from .plugin.chat.offers.status_panel import QwenChatSessionStatusCommand
from .plugin.chat.offers.suggestions import QwenChatAcceptSuggestionCommand, SuggestionListener
from .plugin.chat.prompts.attach_commands import QwenChatAddSelectionCommand, QwenChatAttachFileCommand
from .plugin.chat.prompts.composer_commands import QwenChatHistoryCommand, QwenChatSendCommand
from .plugin.chat.prompts.mention_commands import MentionListener, QwenChatMentionCommand, QwenChatPasteImageCommand
from .plugin.chat.prompts.queue_commands import QwenChatQueuedCommand
from .plugin.chat.requests.file_questions import FileQuestionListener, QwenChatAnswerFileAccessCommand
from .plugin.chat.requests.form_commands import QwenChatAnswerFormCommand
from .plugin.chat.transcript.agent_work import (
    ChatSeenListener,
    PermissionKeysListener,
    QwenChatPermissionCommand,
    QwenChatShowShellOutputCommand,
)
from .plugin.chat.transcript.chat_tabs import (
    ChatTabsListener,
    QwenChatCloseCommand,
    QwenChatDeleteCommand,
    QwenChatRenameCommand,
    QwenChatSwitchCommand,
)
from .plugin.chat.transcript.chat_views import QwenChatApplyCommand, adopt_chat_views, left_chat_tab
from .plugin.chat.window_chats import chats, preload_chat
from .plugin.chat.worktrees.worktree_commands import (
    QwenChatNewWorktreeCommand,
    QwenWorktreeDiscardCommand,
    QwenWorktreesCommand,
)
from .plugin.chat.worktrees.worktree_review import QwenWorktreeApplyCommand, QwenWorktreeChangesCommand
from .plugin.companion import status
from .plugin.companion.companion_commands import QwenRestartServerCommand, QwenShowLogCommand
from .plugin.companion.companion_listeners import CompanionWindowListener
from .plugin.companion.companions import companions
from .plugin.companion.context_listener import ContextListener
from .plugin.companion.status import QwenStatusListener
from .plugin.companion.terminal import (
    QwenCopyConnectCommandCommand,
    QwenCopyRemoteConnectCommandCommand,
    QwenOpenTerminalCommand,
)
from .plugin.diagnose_command import QwenDiagnoseConnectionCommand, QwenReplaceReportCommand
from .plugin.editor import QwenChatReplaceBufferCommand
from .plugin.placement import PlacementListener
from .plugin.reviews.review_commands import (
    QwenAcceptDiffCommand,
    QwenRejectDiffCommand,
    QwenReviewFillCommand,
    ReviewListener,
)

# Sublime finds commands and listeners among this module's names.
__all__ = [
    "ActionsListener",
    "ChatListener",
    "ChatSeenListener",
    "ChatTabsListener",
    "CommentEditsListener",
    "CommentMarksListener",
    "CompanionWindowListener",
    "ContextListener",
    "FileQuestionListener",
    "MentionListener",
    "PermissionKeysListener",
    "PlacementListener",
    "QwenAcceptDiffCommand",
    "QwenActionCommand",
    "QwenAnswerHistoryCommand",
    "QwenCancelActionCommand",
    "QwenChatAcceptSuggestionCommand",
    "QwenChatAddSelectionCommand",
    "QwenChatAnswerFileAccessCommand",
    "QwenChatAnswerFormCommand",
    "QwenChatApplyCommand",
    "QwenChatAskAsideCommand",
    "QwenChatAttachFileCommand",
    "QwenChatBranchCommand",
    "QwenChatBranchMenuCommand",
    "QwenChatCancelCommand",
    "QwenChatCloseCommand",
    "QwenChatCommand",
    "QwenChatContinueInTerminalCommand",
    "QwenChatCopyCommand",
    "QwenChatCycleModeCommand",
    "QwenChatDeleteCommand",
    "QwenChatEditPromptCommand",
    "QwenChatExportCommand",
    "QwenChatForgetCommand",
    "QwenChatHistoryCommand",
    "QwenChatMcpServersCommand",
    "QwenChatMentionCommand",
    "QwenChatModeCommand",
    "QwenChatModelCommand",
    "QwenChatNewCommand",
    "QwenChatNewFromSummaryCommand",
    "QwenChatNewWorktreeCommand",
    "QwenChatOpenMemoryCommand",
    "QwenChatPasteImageCommand",
    "QwenChatPermissionCommand",
    "QwenChatPromptMenuCommand",
    "QwenChatQueuedCommand",
    "QwenChatRememberCommand",
    "QwenChatRenameCommand",
    "QwenChatReplaceBufferCommand",
    "QwenChatRewindCommand",
    "QwenChatSendCommand",
    "QwenChatSessionOptionsCommand",
    "QwenChatSessionStatusCommand",
    "QwenChatSessionsCommand",
    "QwenChatShowAgentLogCommand",
    "QwenChatShowShellOutputCommand",
    "QwenChatSummarizeCommand",
    "QwenChatSwitchCommand",
    "QwenChooseActionModelCommand",
    "QwenCommentAddCommand",
    "QwenCommentDeleteCommand",
    "QwenCommentEditCommand",
    "QwenCommentsListCommand",
    "QwenCopyConnectCommandCommand",
    "QwenCopyRemoteConnectCommandCommand",
    "QwenDiagnoseConnectionCommand",
    "QwenOpenTerminalCommand",
    "QwenRejectDiffCommand",
    "QwenReplaceReportCommand",
    "QwenRestartServerCommand",
    "QwenReviewFillCommand",
    "QwenReviewListener",
    "QwenReviewSendCommand",
    "QwenSendSelectionToTerminalCommand",
    "QwenServeStopCommand",
    "QwenShowLogCommand",
    "QwenStatusListener",
    "QwenTurnChangesAtCaretCommand",
    "QwenTurnChangesCommand",
    "QwenTurnKeepCommand",
    "QwenTurnUndoCommand",
    "QwenWorktreeApplyCommand",
    "QwenWorktreeChangesCommand",
    "QwenWorktreeDiscardCommand",
    "QwenWorktreesCommand",
    "SuggestionListener",
    "TurnReferenceListener",
    "plugin_loaded",
    "plugin_unloaded",
]

_log_handler: logging.Handler | None = None


class QwenReviewListener(ReviewListener):
    """Defined in this module because after a run-time load Sublime sends
    `on_init` (which adopts review tabs left by the previous load) only to
    listeners whose class belongs to the plugin module being loaded."""


def plugin_loaded() -> None:
    global _log_handler
    _log_handler = log.install()
    wiring.register_all()
    # Imports and socket set-up happen on a thread of ours, not here.
    # Prestarted agents come after the servers: they get their port.
    companions.start_soon(preload=preload_libraries, then=after_start)


@threads.may_block
def preload_libraries() -> None:
    """The ACP and pydantic models the chat uses take about a second of CPU
    to import: done on our start thread, not by the first Chat on Sublime's
    main thread (the quick actions import neither)."""
    preload_chat()


@threads.on_worker
def after_start() -> None:
    """Once the servers run and the libraries are imported."""
    prestart_all()
    sweep_serve_daemons()  # a daemon whose folder is gone ends
    # Chat tabs left by an earlier load are adopted on the main thread.
    if any(left_chat_tab(view) for window in sublime.windows() for view in window.views()):
        sublime.set_timeout(adopt_chat_views)


def plugin_unloaded() -> None:
    # Nothing here waits: the agents and the actions' runs are killed without
    # waiting, the lock files are removed and the servers close on a thread of ours.
    chats.stop_all()
    actions.stop_all()
    companions.stop_soon()
    status.remove_all()
    wiring.unregister_all()
    if _log_handler is not None:
        log.uninstall(_log_handler)
    forget_types_of(__package__)  # the next copy of the package must not keep this one alive
