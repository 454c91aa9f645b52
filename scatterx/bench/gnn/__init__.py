"""The GNN benches: models trained and run with PyG's default path and with ``scatterx.pyg`` side by side.

- ``full_graph``: ``scatterx bench-gnn``, full-batch training epochs on a built-in graph shape (the models, the
  graphs and the training loop the others share);
- ``cold``, ``compiled``, ``onnx_inference``: its ``--cold``, ``--compile`` and ``--onnx`` tables;
- ``minibatch`` (its graphs in ``minibatch_graphs``): ``scatterx bench-gnn --mini-batch``, neighbour-sampled batches;
- ``distributed``: ``scatterx bench-dist``, training from saved shards over several processes.

The operator benches (``scatterx bench``, ``--grid``) are the modules beside this package.
"""
