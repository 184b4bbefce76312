"""Receipt-driven sessions: the state machine (machine) and what the chain proves about a step (evidence)."""
