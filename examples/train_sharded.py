"""Train a two-layer PyG model full-graph over several processes, each loading only its own shard.

    scatterx partition arxiv --world 2 shards/                              # once: one file per rank
    torchrun --nproc-per-node 2 examples/train_sharded.py shards/ --model sage

It is a plain single-process PyG training script, but for the two lines marked: the graph comes from this rank's
shard (``load_shard`` also joins torchrun's process group: gloo, or NCCL with ``--device cuda``), and the model is
replicated over the ranks (its parameters checked equal, its gradients summed before each step). Each rank holds
its nodes' rows and the edges into them; the layers fetch the rows of the remote neighbours they need.
"""

import argparse

import torch
import torch.nn.functional as F
from torch_geometric.nn import GATConv, GCNConv, SAGEConv

import scatterx.distributed as sxd
import scatterx.pyg

LAYERS = {"sage": SAGEConv, "gcn": GCNConv, "gat": GATConv}


class Net(torch.nn.Module):
    def __init__(self, layer, features, hidden, classes):
        super().__init__()
        self.first, self.second = layer(features, hidden), layer(hidden, classes)

    def forward(self, x, edge_index):
        return self.second(F.relu(self.first(x, edge_index)), edge_index)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shards", help="the directory `scatterx partition` wrote")
    parser.add_argument("--model", default="sage", choices=sorted(LAYERS))
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--device", default="cpu", help="cpu (gloo) or cuda (NCCL, one GPU per rank)")
    args = parser.parse_args()
    device = torch.device(args.device)
    if device.type == "cuda":
        import os

        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)

    scatterx.pyg.enable()
    data = sxd.load_shard(args.shards, device=device, backend="nccl" if device.type == "cuda" else "gloo")  # 1
    classes = int(data.meta["classes"]) if "classes" in data.meta else int(data.y.max()) + 1
    torch.manual_seed(0)
    model = Net(LAYERS[args.model], data.x.size(1), args.hidden, classes).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    sxd.replicate(model, optimizer, weight=data.train_share)  # 2

    for epoch in range(args.epochs):
        optimizer.zero_grad()
        out = model(data.x, data.edge_index)
        loss = F.cross_entropy(out[data.train_mask], data.y[data.train_mask])
        loss.backward()
        optimizer.step()
        # the loss over all ranks' training nodes (a rank with none has a NaN mean, of weight 0)
        total = torch.nan_to_num(loss.detach()) * data.train_share
        rank, world = sxd.rank_and_world()
        if world > 1:
            torch.distributed.all_reduce(total)
        if rank == 0:
            print(f"epoch {epoch}: loss {float(total):.4f}", flush=True)


if __name__ == "__main__":
    main()
