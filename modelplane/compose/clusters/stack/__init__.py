"""The parts of a ServingStack (`clusters/serving_stack.py` composes them).

- `charts`: the pinned Helm charts and their values;
- `inference_pool`: the InferencePool CRD, installed as a provider-kubernetes Object;
- `queues`: the queues and PriorityClasses the cluster's pods name;
- `present`: the checks of components the cluster already runs (not installed);
- `inference_pool_crd`: the CRD itself, generated data.
"""
