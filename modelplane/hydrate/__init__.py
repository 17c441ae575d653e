"""The hydrator: what a ModelCache's Job runs on a workload cluster (`modelplane hydrate`).

An adapter layer like `local`: it does I/O (downloads, files, the Kubernetes
API) and depends only on `api` for the hydration contract (environment names,
the result it reports). The download libraries (huggingface_hub, boto3) are
the `[hydrate]` extra and are imported only inside the functions that use
them, so the composition function never loads them.

- `staging`: atomic, resumable staging into the destination folder;
- `sources`: one fetcher per source kind (Hugging Face, S3, HTTP, inline);
- `report`: the result ConfigMap, patched through the in-cluster API.
"""
