"""From canonical tables to a finished replay: compile the inputs, run the engine, read the results."""
