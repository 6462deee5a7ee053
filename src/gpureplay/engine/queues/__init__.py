"""Queue systems, each in its own wing with its own state bundle: Kueue, Volcano, KAI."""
