"""The view settings that mark a review's tabs. Other features read them
(the editor context leaves review tabs out) without loading the reviews."""

DIFF_VIEW = "qwen_companion.diff_view"
"""True on every review view: the editor context leaves these out."""
REVIEW_ID = "qwen_companion.review_id"
SIDE = "qwen_companion.diff_side"  # "original" or "proposed"
