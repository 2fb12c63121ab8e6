"""One page per question a reviewer asks."""
