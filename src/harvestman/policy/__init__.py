"""Pure decisions: what a fetch outcome means, politeness and back-off, scope, robots.txt rules."""
