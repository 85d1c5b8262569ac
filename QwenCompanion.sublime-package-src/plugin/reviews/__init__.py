"""Review tabs: a proposed change shown beside the file, accepted or rejected.

Shared by every feature that proposes edits."""
