"""From canonical tables to a finished replay: compile the inputs, run the engine, read the results."""

from gpureplay.replay.simulate import ATTEMPT_SCHEMA, JOB_RESULT_SCHEMA, TIMELINE_SCHEMA, Replay, simulate

__all__ = ["ATTEMPT_SCHEMA", "JOB_RESULT_SCHEMA", "TIMELINE_SCHEMA", "Replay", "simulate"]
