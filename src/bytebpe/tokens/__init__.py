"""Encoded datasets on disk, one module per part (this package imports none of them itself):

- `arrays`: token arrays written as a stream (`.npy` whose length is known only at the end, raw `.bin`),
  every file under a temporary name until committed;
- `layout`: what a run leaves under its PREFIX (file names, the metadata sidecar, the index of a sharded
  set), and loading any of them back (`load_tokens`, `load_token_files`, `load_token_shards`);
- `writer`: writing one set, whole or in numbered shards with its index, committed together.

`arrays` is a file format (layer 1 of tests/unit/test_layers.py); `layout` and `writer` belong to the dataset
pipelines that use them.
"""
