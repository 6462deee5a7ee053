"""Result files of a run: explicit Parquet schemas, metadata, atomic writes, summary metrics."""
