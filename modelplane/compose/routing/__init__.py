"""The routing wing: how requests reach the replicas, through the control plane.

Entry points (composers):
- `inference_gateway.compose`: InferenceGateway, Envoy Gateway on the control
  plane and its Gateway;
- `model_service.compose`: ModelService, one weighted OpenAI-compatible route
  over ModelEndpoints (`model_service.plan`);
- `model_endpoint.compose`: ModelEndpoint, whether an endpoint may receive
  traffic.

Inside: `gateway_objects` (Envoy Gateway objects as provider-kubernetes
Objects with their readiness), `service_objects` (a ModelService's Backends,
routes and ReferenceGrants), `hops` (which endpoints the fleet gateway may and
can reach) and `weights` (integer traffic weights).
"""
