"""A chat's views and tabs: the transcript, the plan, the queue, notifications."""
