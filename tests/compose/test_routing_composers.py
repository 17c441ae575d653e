"""ModelEndpoint, ModelService and InferenceGateway composers: request → expected response."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import conformance_module

from modelplane.compose.routing import inference_gateway, model_endpoint, model_service
from modelplane.compose.types import ComposeInput, ComposeResult

NS = "team-a"
GATEWAY = {
    "apiVersion": "modelplane.ai/v1alpha1",
    "kind": "InferenceGateway",
    "metadata": {"name": "default"},
    "spec": {},
    "status": {
        "address": "http://198.51.100.7",
        "gatewayName": "modelplane",
        "gatewayNamespace": "envoy-gateway-system",
        "providerConfigName": "modelplane-control-plane",
    },
}


def endpoint(
    name: str,
    url: str,
    labels: dict[str, str],
    *,
    ready: bool = True,
    ns: str = NS,
    **spec: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelEndpoint",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {"url": url, **spec},
        "status": {"ready": ready},
    }


def service(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelService",
        "metadata": {"name": "qwen", "namespace": NS},
        "spec": spec,
    }


CANARY = service(
    endpoints=[
        {"selector": {"matchLabels": {"track": "stable"}}, "weight": 90},
        {"selector": {"matchLabels": {"track": "canary"}}, "weight": 10},
    ]
)


def run_service(
    xr: dict[str, Any], endpoints: list[dict[str, Any]], gateway: dict[str, Any] | None = GATEWAY
) -> ComposeResult:
    required = {
        model_service.GATEWAY_REQUIREMENT: [gateway] if gateway else [],
        model_service.ENDPOINTS_REQUIREMENT: endpoints,
    }
    return model_service.compose(ComposeInput(composite=xr, required=required))


def conditions(res: ComposeResult) -> dict[str, tuple[str, str]]:
    return {x.type: (x.status, x.reason) for x in res.conditions}


def manifest(res: ComposeResult, key: str) -> dict[str, Any]:
    return res.desired[key].resource["spec"]["forProvider"]["manifest"]


class TestModelService:
    def test_first_call_requires_gateway_and_own_namespace_endpoints(self) -> None:
        res = model_service.compose(ComposeInput(composite=CANARY))
        reqs = res.requirements
        assert (reqs["gateway"].kind, reqs["gateway"].match_name) == ("InferenceGateway", "default")
        assert (reqs["endpoints"].kind, reqs["endpoints"].namespace) == ("ModelEndpoint", NS)
        assert res.desired == {} and res.ready == "False"
        assert conditions(res)["GatewayReady"] == ("Unknown", "WaitingForResources")

    def test_canary_route_matches_the_hand_written_manifest(self) -> None:
        res = run_service(
            CANARY,
            [
                endpoint("stable-0", "http://203.0.113.10/team-a/qwen/0", {"track": "stable"}),
                endpoint("canary-0", "http://203.0.113.10/team-a/qwen/0", {"track": "canary"}),
            ],
        )
        route = manifest(res, "route")

        def rule(path: str) -> dict[str, Any]:
            return {
                "matches": [{"path": {"type": "PathPrefix", "value": f"/team-a/qwen{path}"}}],
                "filters": [
                    {
                        "type": "URLRewrite",
                        "urlRewrite": {
                            "path": {
                                "type": "ReplacePrefixMatch",
                                "replacePrefixMatch": f"/team-a/qwen/0{path}",
                            }
                        },
                    }
                ],
                "backendRefs": [
                    {
                        "group": "gateway.envoyproxy.io",
                        "kind": "Backend",
                        "name": "qwen-canary-0",
                        "weight": 100,
                    },
                    {
                        "group": "gateway.envoyproxy.io",
                        "kind": "Backend",
                        "name": "qwen-stable-0",
                        "weight": 900,
                    },
                ],
            }

        assert route == {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "HTTPRoute",
            "metadata": {
                "name": "qwen",
                "namespace": NS,
                "labels": {
                    "app.kubernetes.io/managed-by": "modelplane",
                    "modelplane.ai/service": "qwen",
                },
            },
            "spec": {
                "parentRefs": [
                    {
                        "group": "gateway.networking.k8s.io",
                        "kind": "Gateway",
                        "name": "modelplane",
                        "namespace": "envoy-gateway-system",
                    }
                ],
                "rules": [
                    rule("/v1/chat/completions"),
                    rule("/v1/completions"),
                    rule("/v1/embeddings"),
                    rule("/v1/models"),
                ],
            },
        }
        assert manifest(res, "backend-stable-0")["spec"] == {
            "endpoints": [{"ip": {"address": "203.0.113.10", "port": 80}}]
        }
        wrapper = res.desired["route"].resource
        assert wrapper["metadata"]["namespace"] == NS
        assert wrapper["spec"]["providerConfigRef"] == {
            "kind": "ClusterProviderConfig",
            "name": "modelplane-control-plane",
        }
        assert res.status["address"] == "http://198.51.100.7/team-a/qwen"
        assert res.status["endpoints"] == [
            {"name": "canary-0", "weight": 100, "ready": True},
            {"name": "stable-0", "weight": 900, "ready": True},
        ]
        assert res.status["endpointsReady"] == "2/2"
        assert conditions(res)["EndpointsReady"] == ("True", "AllEndpointsReady")
        # Nothing observed yet: composed, but not ready.
        assert res.ready == "False"

    def test_https_saas_backend_has_tls_host_rewrite_and_credential_filter(self) -> None:
        xr = service(
            host="qwen.example.com",
            endpoints=[{"selector": {"matchLabels": {"model": "qwen"}}}],
        )
        saas = endpoint(
            "saas",
            "https://api.provider.example.com:8443/openai",
            {"model": "qwen"},
            authSecretRef={"name": "provider-key", "key": "credential"},
            headerName="X-Api-Key",
        )
        res = run_service(xr, [saas])
        assert manifest(res, "backend-saas")["spec"] == {
            "endpoints": [{"fqdn": {"hostname": "api.provider.example.com", "port": 8443}}],
            "tls": {"wellKnownCACertificates": "System", "sni": "api.provider.example.com"},
        }
        # The key is already `credential`: the filter names the user's Secret, no copy.
        assert "credential-saas" not in res.desired
        assert manifest(res, "filter-saas")["spec"] == {
            "credentialInjection": {
                "header": "X-Api-Key",
                "overwrite": True,
                "credential": {"valueRef": {"name": "provider-key"}},
            }
        }
        route = manifest(res, "route")
        assert route["spec"]["hostnames"] == ["qwen.example.com"]
        first = route["spec"]["rules"][0]
        assert first["matches"] == [
            {"path": {"type": "PathPrefix", "value": "/v1/chat/completions"}}
        ]
        assert first["filters"][0]["urlRewrite"]["path"]["replacePrefixMatch"] == (
            "/openai/v1/chat/completions"
        )
        assert first["backendRefs"] == [
            {
                "group": "gateway.envoyproxy.io",
                "kind": "Backend",
                "name": "qwen-saas",
                "weight": 1000,
                "filters": [
                    {"type": "URLRewrite", "urlRewrite": {"hostname": "api.provider.example.com"}},
                    {
                        "type": "ExtensionRef",
                        "extensionRef": {
                            "group": "gateway.envoyproxy.io",
                            "kind": "HTTPRouteFilter",
                            "name": "qwen-saas-auth",
                        },
                    },
                ],
            }
        ]
        assert res.status["address"] == "http://qwen.example.com"

    def test_other_key_is_copied_by_the_provider_never_by_the_function(self) -> None:
        xr = service(endpoints=[{"selector": {"matchLabels": {"model": "qwen"}}}])
        saas = endpoint(
            "saas",
            "https://api.provider.example.com",
            {"model": "qwen"},
            authSecretRef={"name": "provider-key", "key": "token.v1"},
        )
        res = run_service(xr, [saas])
        copy = res.desired["credential-saas"].resource
        assert copy["spec"]["forProvider"]["manifest"] == {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": "qwen-saas-credential",
                "namespace": NS,
                "labels": {
                    "app.kubernetes.io/managed-by": "modelplane",
                    "modelplane.ai/service": "qwen",
                    "modelplane.ai/endpoint": "saas",
                },
            },
            "type": "Opaque",
        }
        assert copy["spec"]["references"] == [
            {
                "patchesFrom": {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "name": "provider-key",
                    "namespace": NS,
                    "fieldPath": "data[token.v1]",
                },
                "toFieldPath": "data.credential",
            }
        ]
        ref = manifest(res, "filter-saas")["spec"]["credentialInjection"]["credential"]
        assert ref == {"valueRef": {"name": "qwen-saas-credential"}}

    def test_a_hold_never_echoes_a_value_the_provider_patched_into_the_copy(self) -> None:
        xr = service(endpoints=[{"selector": {"matchLabels": {"model": "qwen"}}}])
        saas = endpoint(
            "saas",
            "https://api.provider.example.com",
            {"model": "qwen"},
            authSecretRef={"name": "provider-key", "key": "api-key"},
        )
        copy = run_service(xr, [saas]).desired["credential-saas"].resource
        leaked = {
            **copy,
            "spec": {
                **copy["spec"],
                "forProvider": {
                    "manifest": {
                        **copy["spec"]["forProvider"]["manifest"],
                        "data": {"credential": "QmVhcmVyIHNrLXNlY3JldA=="},
                    }
                },
            },
            "status": {
                "atProvider": {"manifest": {"data": {"credential": "QmVhcmVyIHNrLXNlY3JldA=="}}},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
        # The endpoint stops being Ready: the service holds and keeps the copy.
        inp = ComposeInput(
            composite=xr,
            observed={"credential-saas": leaked},
            required={"gateway": [GATEWAY], "endpoints": [{**saas, "status": {"ready": False}}]},
        )
        res = model_service.compose(inp)
        assert sorted(res.desired) == ["credential-saas"]
        assert "QmVhcmVyIHNrLXNlY3JldA==" not in json.dumps(res.desired["credential-saas"].resource)
        assert (
            res.desired["credential-saas"].resource["spec"]["forProvider"]["manifest"]
            == (copy["spec"]["forProvider"]["manifest"])
        )
        # Still judged by its conditions: the copy exists.
        assert res.desired["credential-saas"].ready == "True"

    def test_endpoints_of_another_namespace_are_never_selected(self) -> None:
        xr = service(endpoints=[{"selector": {"matchLabels": {"model": "qwen"}}}])
        res = run_service(
            xr,
            [
                endpoint("theirs", "http://203.0.113.9", {"model": "qwen"}, ns="team-b"),
                endpoint("ours", "http://203.0.113.8", {"model": "qwen"}),
            ],
        )
        assert res.status["endpoints"] == [{"name": "ours", "weight": 1000, "ready": True}]
        assert sorted(res.desired) == ["backend-ours", "route"]
        alone = run_service(
            xr, [endpoint("theirs", "http://203.0.113.9", {"model": "qwen"}, ns="team-b")]
        )
        assert alone.desired == {}
        assert conditions(alone)["EndpointsReady"] == ("False", "NoReadyEndpoints")
        assert alone.status["endpoints"] == []

    def test_no_ready_endpoint_holds_with_a_reason_and_keeps_the_old_route(self) -> None:
        observed = {
            "route": {"apiVersion": "kubernetes.m.crossplane.io/v1alpha1", "kind": "Object"}
        }
        inp = ComposeInput(
            composite=CANARY,
            observed=observed,
            required={
                "gateway": [GATEWAY],
                "endpoints": [
                    endpoint("stable-0", "http://203.0.113.10", {"track": "stable"}, ready=False)
                ],
            },
        )
        res = model_service.compose(inp)
        assert conditions(res)["EndpointsReady"] == ("False", "NoReadyEndpoints")
        assert "stable-0" in next(x.message for x in res.conditions if x.type == "EndpointsReady")
        assert sorted(res.desired) == ["route"]
        assert res.ready == "False"
        assert [e.reason for e in res.events] == ["NoReadyEndpoints"]
        assert res.status["endpoints"] == [{"name": "stable-0", "weight": 0, "ready": False}]

    @pytest.mark.parametrize(
        ("gateway", "reason"),
        [
            (None, "GatewayNotFound"),
            ({**GATEWAY, "status": {"gatewayName": "modelplane"}}, "NoAddress"),
            ({**GATEWAY, "status": {"address": 7}}, "NoAddress"),
        ],
    )
    def test_services_wait_for_a_gateway_with_an_address(self, gateway, reason) -> None:
        res = run_service(
            CANARY, [endpoint("s", "http://203.0.113.1", {"track": "stable"})], gateway
        )
        assert conditions(res)["GatewayReady"] == ("False", reason)
        assert res.desired == {} and res.ready == "False"

    def test_different_upstream_paths_route_in_two_hops(self) -> None:
        gateway = {
            **GATEWAY,
            "status": {**GATEWAY["status"], "internalAddress": "envoy.gw.svc.cluster.local:80"},
        }
        res = run_service(
            CANARY,
            [
                endpoint("stable-0", "http://203.0.113.10/team-a/a/0", {"track": "stable"}),
                endpoint(
                    "canary-0",
                    "https://canary.example.com/team-a/b/0",
                    {"track": "canary"},
                    authSecretRef={"name": "k", "key": "credential"},
                ),
            ],
            gateway,
        )
        assert sorted(res.desired) == [
            "backend-canary-0",
            "backend-hop",
            "backend-stable-0",
            "filter-canary-0",
            "route",
            "route-canary-0",
            "route-stable-0",
        ]
        assert manifest(res, "backend-hop")["spec"] == {
            "endpoints": [{"fqdn": {"hostname": "envoy.gw.svc.cluster.local", "port": 80}}]
        }
        first = manifest(res, "route")["spec"]["rules"][1]
        assert first == {
            "matches": [{"path": {"type": "PathPrefix", "value": "/team-a/qwen/v1/completions"}}],
            "filters": [
                {
                    "type": "URLRewrite",
                    "urlRewrite": {
                        "path": {
                            "type": "ReplacePrefixMatch",
                            "replacePrefixMatch": "/v1/completions",
                        }
                    },
                }
            ],
            "backendRefs": [
                {
                    "group": "gateway.envoyproxy.io",
                    "kind": "Backend",
                    "name": "qwen-hop",
                    "weight": 100,
                    "filters": [
                        {
                            "type": "URLRewrite",
                            "urlRewrite": {
                                "hostname": "qwen-canary-0.team-a.hop.modelplane.internal"
                            },
                        }
                    ],
                },
                {
                    "group": "gateway.envoyproxy.io",
                    "kind": "Backend",
                    "name": "qwen-hop",
                    "weight": 900,
                    "filters": [
                        {
                            "type": "URLRewrite",
                            "urlRewrite": {
                                "hostname": "qwen-stable-0.team-a.hop.modelplane.internal"
                            },
                        }
                    ],
                },
            ],
        }
        canary = manifest(res, "route-canary-0")
        assert canary["metadata"]["name"] == "qwen-canary-0"
        assert canary["spec"]["hostnames"] == ["qwen-canary-0.team-a.hop.modelplane.internal"]
        assert canary["spec"]["rules"][1] == {
            "matches": [{"path": {"type": "PathPrefix", "value": "/v1/completions"}}],
            "filters": [
                {
                    "type": "URLRewrite",
                    "urlRewrite": {
                        "hostname": "canary.example.com",
                        "path": {
                            "type": "ReplacePrefixMatch",
                            "replacePrefixMatch": "/team-a/b/0/v1/completions",
                        },
                    },
                }
            ],
            "backendRefs": [
                {
                    "group": "gateway.envoyproxy.io",
                    "kind": "Backend",
                    "name": "qwen-canary-0",
                    "filters": [
                        {
                            "type": "ExtensionRef",
                            "extensionRef": {
                                "group": "gateway.envoyproxy.io",
                                "kind": "HTTPRouteFilter",
                                "name": "qwen-canary-0-auth",
                            },
                        }
                    ],
                }
            ],
        }
        stable = manifest(res, "route-stable-0")["spec"]["rules"][0]
        assert stable["filters"] == [
            {
                "type": "URLRewrite",
                "urlRewrite": {
                    "path": {
                        "type": "ReplacePrefixMatch",
                        "replacePrefixMatch": "/team-a/a/0/v1/chat/completions",
                    }
                },
            }
        ]
        assert res.status["address"] == "http://198.51.100.7/team-a/qwen"
        assert conditions(res)["EndpointsReady"] == ("True", "AllEndpointsReady")

    def test_different_upstream_paths_without_an_internal_listener_hold(self) -> None:
        res = run_service(
            CANARY,
            [
                endpoint("stable-0", "http://203.0.113.10/team-a/a/0", {"track": "stable"}),
                endpoint("canary-0", "http://203.0.113.11/team-a/b/0", {"track": "canary"}),
            ],
        )
        assert conditions(res)["EndpointsReady"] == ("False", "ConflictingUpstreamPaths")
        assert res.desired == {}

    def test_more_ready_endpoints_than_a_rule_takes_hold(self) -> None:
        eps = [endpoint(f"e{i:02d}", "http://203.0.113.1", {"track": "stable"}) for i in range(17)]
        res = run_service(CANARY, eps)
        assert conditions(res)["EndpointsReady"] == ("False", "TooManyEndpoints")
        assert res.desired == {}
        assert len(run_service(CANARY, eps[:16]).desired) == 17  # 16 Backends and the route

    def test_invalid_endpoint_is_listed_but_never_routed(self) -> None:
        bad = endpoint("bad", "ftp://x", {"track": "stable"})
        good = endpoint("good", "http://203.0.113.1", {"track": "stable"})
        res = run_service(CANARY, [bad, good])
        assert res.status["endpoints"] == [
            {"name": "bad", "weight": 0, "ready": False},
            {"name": "good", "weight": 1000, "ready": True},
        ]
        assert conditions(res)["EndpointsReady"] == ("True", "SomeEndpointsNotReady")

    def test_ready_once_every_object_is_observed_ready(self) -> None:
        eps = [endpoint("stable-0", "http://203.0.113.10", {"track": "stable"})]
        first = run_service(CANARY, eps)
        accepted = {"status": {"conditions": [{"type": "Accepted", "status": "True"}]}}
        route = {"status": {"parents": [{"conditions": [{"type": "Accepted", "status": "True"}]}]}}
        observed = {
            "backend-stable-0": {
                **first.desired["backend-stable-0"].resource,
                "status": {"atProvider": {"manifest": accepted}},
            },
            "route": {
                **first.desired["route"].resource,
                "status": {"atProvider": {"manifest": route}},
            },
        }
        inp = ComposeInput(
            composite=CANARY, observed=observed, required={"gateway": [GATEWAY], "endpoints": eps}
        )
        assert model_service.compose(inp).ready == "True"


SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "provider-key", "namespace": NS},
    "data": {"api-key": base64.b64encode(b"Bearer sk-very-secret").decode()},
}


class TestModelEndpoint:
    def run(self, xr: dict[str, Any], secrets: list[dict[str, Any]] | None) -> ComposeResult:
        required = {} if secrets is None else {model_endpoint.SECRET_REQUIREMENT: secrets}
        return model_endpoint.compose(ComposeInput(composite=xr, required=required))

    def xr(self, **spec: Any) -> dict[str, Any]:
        return endpoint("saas", "https://api.provider.example.com", {}, **spec)

    def test_without_credential_ready_when_valid(self) -> None:
        res = self.run(self.xr(), None)
        assert (res.ready, res.status) == ("True", {"ready": True})
        assert res.requirements == {}

    def test_invalid_url_is_a_condition_naming_the_field(self) -> None:
        res = self.run(endpoint("x", "http://user:pw@host.example.com", {}), None)
        assert conditions(res)["Valid"] == ("False", "InvalidSpec")
        message = next(x.message for x in res.conditions if x.type == "Valid")
        assert message.startswith("spec.url:") and "authSecretRef" in message
        assert (res.ready, res.status) == ("False", {"ready": False})

    def test_missing_secret_is_a_condition_naming_the_secret(self) -> None:
        xr = self.xr(authSecretRef={"name": "provider-key", "key": "api-key"})
        waiting = self.run(xr, None)
        assert waiting.requirements["auth-secret"].match_name == "provider-key"
        assert waiting.requirements["auth-secret"].namespace == NS
        assert waiting.status == {"ready": False}
        res = self.run(xr, [])
        assert conditions(res)["CredentialsResolved"] == ("False", "SecretNotFound")
        message = next(x.message for x in res.conditions if x.type == "CredentialsResolved")
        assert "Secret team-a/provider-key not found" in message
        assert (res.ready, res.status) == ("False", {"ready": False})
        assert [e.reason for e in res.events] == ["SecretNotFound"]

    def test_missing_key_is_a_condition(self) -> None:
        xr = self.xr(authSecretRef={"name": "provider-key", "key": "other"})
        res = self.run(xr, [SECRET])
        assert conditions(res)["CredentialsResolved"] == ("False", "SecretKeyMissing")
        assert res.status == {"ready": False}

    def test_secret_present_is_ready_and_its_value_never_leaves(self) -> None:
        xr = self.xr(authSecretRef={"name": "provider-key", "key": "api-key"})
        res = self.run(xr, [SECRET])
        assert (res.ready, res.status) == ("True", {"ready": True})
        text = json.dumps(
            [res.status, [x.__dict__ for x in res.conditions], res.events], default=str
        )
        assert "sk-very-secret" not in text and SECRET["data"]["api-key"] not in text

    def test_endpoint_with_missing_secret_is_not_routed_to(self) -> None:
        xr = self.xr(authSecretRef={"name": "provider-key", "key": "api-key"})
        xr["metadata"]["labels"] = {"model": "qwen"}
        res = self.run(xr, [])
        observed = {**xr, "status": res.status}
        svc = run_service(
            service(endpoints=[{"selector": {"matchLabels": {"model": "qwen"}}}]), [observed]
        )
        assert svc.status["endpoints"] == [{"name": "saas", "weight": 0, "ready": False}]
        assert conditions(svc)["EndpointsReady"] == ("False", "NoReadyEndpoints")


def gateway_xr(name: str = "default", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceGateway",
        "metadata": {"name": name},
        "spec": spec,
    }


class TestInferenceGateway:
    def test_defaults_compose_release_class_gateway_and_provider_configs(self) -> None:
        res = inference_gateway.compose(ComposeInput(composite=gateway_xr()))
        assert sorted(res.desired) == [
            "envoyproxy",
            "gateway",
            "gatewayclass",
            "provider-config-helm",
            "provider-config-kubernetes",
            "release",
        ]
        chart = res.desired["release"].resource["spec"]["forProvider"]["chart"]
        assert chart == {
            "name": "gateway-helm",
            "repository": "oci://docker.io/envoyproxy",
            "version": "v1.9.0",
        }
        gw = manifest(res, "gateway")
        assert gw["spec"] == {
            "gatewayClassName": "modelplane",
            "listeners": [
                {
                    "name": "http",
                    "protocol": "HTTP",
                    "port": 80,
                    "allowedRoutes": {"namespaces": {"from": "All"}},
                }
            ],
        }
        assert conditions(res)["GatewayReady"] == ("False", "NoAddress")
        assert "address" not in res.status and res.ready == "False"
        assert res.status["internalAddress"] == (
            "modelplane-gateway.envoy-gateway-system.svc.cluster.local:80"
        )

    def test_https_listener_and_envoy_proxy(self) -> None:
        xr = gateway_xr(
            listeners=[
                {
                    "name": "https",
                    "protocol": "HTTPS",
                    "port": 8443,
                    "certificateSecretRef": {"name": "tls"},
                }
            ],
            envoyProxy={"replicas": 3, "serviceType": "NodePort"},
        )
        res = inference_gateway.compose(ComposeInput(composite=xr))
        (listener,) = manifest(res, "gateway")["spec"]["listeners"]
        assert listener["tls"] == {
            "mode": "Terminate",
            "certificateRefs": [{"group": "", "kind": "Secret", "name": "tls"}],
        }
        assert manifest(res, "envoyproxy")["spec"] == {
            "provider": {
                "type": "Kubernetes",
                "kubernetes": {
                    "envoyDeployment": {"replicas": 3},
                    # A fixed name: the in-cluster target of a service's second hop.
                    "envoyService": {"name": "modelplane-gateway", "type": "NodePort"},
                },
            }
        }
        assert manifest(res, "gatewayclass")["spec"]["parametersRef"] == {
            "group": "gateway.envoyproxy.io",
            "kind": "EnvoyProxy",
            "name": "modelplane",
            "namespace": "envoy-gateway-system",
        }
        gw = res.desired["gateway"].resource
        observed = {
            "gateway": {
                **gw,
                "status": {
                    "atProvider": {
                        "manifest": {
                            "status": {
                                "addresses": [{"type": "IPAddress", "value": "203.0.113.5"}],
                                "conditions": [{"type": "Programmed", "status": "True"}],
                            }
                        }
                    }
                },
            }
        }
        res = inference_gateway.compose(ComposeInput(composite=xr, observed=observed))
        assert res.status["address"] == "https://203.0.113.5:8443"
        # No plain-HTTP listener: no in-cluster address for a second hop.
        assert "internalAddress" not in res.status
        assert conditions(res)["GatewayReady"] == ("True", "Addressed")
        assert res.desired["gateway"].ready == "True"
        # The Release and provider configs are not observed yet.
        assert res.ready == "False"

    def test_only_default_is_served(self) -> None:
        res = inference_gateway.compose(ComposeInput(composite=gateway_xr("second")))
        assert conditions(res)["Valid"] == ("False", "InvalidSpec")
        assert res.desired == {} and res.ready == "False"

    def test_release_values_pass_the_helm_values_oracle(self) -> None:
        helmvalues = conformance_module("helmvalues")
        res = inference_gateway.compose(ComposeInput(composite=gateway_xr()))
        assert helmvalues.check_release(res.desired["release"].resource) == []


def test_everything_composed_passes_the_schema_oracles(oracle: Any) -> None:
    results = [
        inference_gateway.compose(
            ComposeInput(
                composite=gateway_xr(
                    listeners=[
                        {"name": "http"},
                        {
                            "name": "https",
                            "protocol": "HTTPS",
                            "port": 443,
                            "certificateSecretRef": {"name": "t"},
                        },
                    ],
                    envoyProxy={"replicas": 2},
                )
            )
        ),
        run_service(
            service(host="qwen.example.com", endpoints=[{"selector": {"matchLabels": {"m": "q"}}}]),
            [
                endpoint(
                    "a",
                    "https://api.example.com/openai",
                    {"m": "q"},
                    authSecretRef={"name": "k", "key": "api-key"},
                ),
                endpoint(
                    "b",
                    "https://203.0.113.4/openai",
                    {"m": "q"},
                    authSecretRef={"name": "k", "key": "credential"},
                ),
            ],
        ),
    ]
    two_hop = {
        **GATEWAY,
        "status": {**GATEWAY["status"], "internalAddress": "envoy.gw.svc.cluster.local:80"},
    }
    results.append(
        run_service(
            CANARY,
            [
                endpoint(
                    "a",
                    "https://api.example.com/openai",
                    {"track": "stable"},
                    authSecretRef={"name": "k", "key": "api-key"},
                ),
                endpoint("b", "http://203.0.113.4/team-a/b/0", {"track": "canary"}),
            ],
            two_hop,
        )
    )
    docs = [d.resource for r in results for d in r.desired.values()]
    assert len(docs) == 20
    for doc in docs:
        assert [str(i) for i in oracle.validate(doc)] == [], doc["metadata"]["name"]


_JUNK = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=200)
@given(
    spec=_JUNK,
    endpoint_specs=st.lists(_JUNK, max_size=3),
    endpoint_status=_JUNK,
    gateway_status=_JUNK,
    # Observed composed resources are API objects whose CRDs fix the outer
    # shape (spec.forProvider.manifest, status.atProvider.manifest,
    # status.conditions[] are objects); anything may be inside.
    observed=st.dictionaries(
        st.sampled_from(["route", "backend-e0", "credential-e0", "gateway"]),
        st.fixed_dictionaries(
            {
                "spec": st.fixed_dictionaries(
                    {
                        "forProvider": st.fixed_dictionaries(
                            {
                                "manifest": st.dictionaries(
                                    st.sampled_from(["kind", "data", "status"]), _JUNK
                                )
                            }
                        )
                    }
                )
            },
            optional={
                "status": st.fixed_dictionaries(
                    {},
                    optional={
                        "atProvider": st.fixed_dictionaries(
                            {
                                "manifest": st.dictionaries(
                                    st.sampled_from(["status", "data"]), _JUNK
                                )
                            }
                        ),
                        "conditions": st.lists(
                            st.dictionaries(st.sampled_from(["type", "status"]), _JUNK), max_size=2
                        ),
                    },
                )
            },
        ),
    ),
)
def test_junk_input_never_raises(
    spec, endpoint_specs, endpoint_status, gateway_status, observed
) -> None:
    """Junk anywhere in the input gets an answer, never an exception: either a fatal
    result that says why, or desired resources each either built whole (an
    apiVersion, a kind and a name) or observed and kept as they are."""
    eps = [
        {"metadata": {"name": f"e{i}", "namespace": NS}, "spec": s, "status": endpoint_status}
        for i, s in enumerate(endpoint_specs)
    ]
    results = [
        model_service.compose(
            ComposeInput(
                composite=composite,
                observed=observed,
                required={"gateway": [{**GATEWAY, "status": gateway_status}], "endpoints": eps},
            )
        )
        for composite in (
            service(endpoints=spec),
            {"metadata": {"name": "q", "namespace": NS}, "spec": spec},
        )
    ]
    results.append(
        model_endpoint.compose(
            ComposeInput(
                composite={"metadata": {"name": "e", "namespace": NS}, "spec": spec},
                required={"auth-secret": [{"data": spec}]},
            )
        )
    )
    results.append(
        inference_gateway.compose(
            ComposeInput(
                composite=gateway_xr(**({"listeners": spec} if spec else {})), observed=observed
            )
        )
    )
    assert len(results) == 4
    for res in results:
        assert isinstance(res, ComposeResult)
        if res.fatal is not None:
            assert res.fatal.strip(), "a fatal result must say why"
            continue
        for key, desired in res.desired.items():
            body = desired.resource
            if key in observed and body.get("spec") == observed[key].get("spec"):
                continue  # an observed resource kept as it is, junk included
            assert body.get("apiVersion") and body.get("kind"), key
            assert body.get("metadata", {}).get("name"), key


def _message(res: ComposeResult, type_: str) -> str:
    return next(x.message for x in res.conditions if x.type == type_)


class TestModelServiceRules:
    """Killers for survivors of a mutation sample (issue 24): messages, names, readiness."""

    def test_a_service_without_name_or_without_namespace_is_fatal(self) -> None:
        for metadata in ({"name": "qwen"}, {"namespace": NS}, {}):
            res = run_service({**CANARY, "metadata": metadata}, [])
            assert res.fatal == "ModelService has no metadata.name or metadata.namespace"

    def test_routing_says_valid_and_names_each_endpoints_weight(self) -> None:
        res = run_service(
            CANARY,
            [
                endpoint("stable-0", "http://203.0.113.10", {"track": "stable"}),
                endpoint("canary-0", "http://203.0.113.11", {"track": "canary"}),
            ],
        )
        assert conditions(res)["Valid"] == ("True", "Valid")
        assert _message(res, "EndpointsReady") == "routing to canary-0=100, stable-0=900"

    def test_routing_names_the_endpoints_that_receive_no_traffic(self) -> None:
        bad = endpoint("bad", "ftp://x", {"track": "stable"})
        good = endpoint("good", "http://203.0.113.1", {"track": "stable"})
        res = run_service(CANARY, [bad, good])
        assert _message(res, "EndpointsReady") == (
            "routing to good=1000; not Ready (no traffic): bad"
        )

    def test_no_ready_endpoint_names_each_and_only_a_real_problem(self) -> None:
        res = run_service(
            CANARY, [endpoint("stable-0", "http://203.0.113.10", {"track": "stable"}, ready=False)]
        )
        assert _message(res, "EndpointsReady") == (
            "none of the selected endpoints is Ready: stable-0; the service does not route "
            "until one is"
        )

    def test_conflicting_upstream_paths_name_each_endpoints_path(self) -> None:
        res = run_service(
            CANARY,
            [
                endpoint("stable-0", "http://203.0.113.10/team-a/a/0", {"track": "stable"}),
                endpoint("canary-0", "http://203.0.113.11/team-a/b/0", {"track": "canary"}),
            ],
        )
        assert _message(res, "EndpointsReady").startswith(
            "Ready endpoints disagree on their upstream path prefix "
            "(canary-0: /team-a/b/0, stable-0: /team-a/a/0); "
        )

    def test_the_address_under_a_host_keeps_the_gateways_port(self) -> None:
        eps = [endpoint("stable-0", "http://203.0.113.10", {"track": "stable"})]
        xr = {**CANARY, "spec": {**CANARY["spec"], "host": "qwen.example.com"}}
        for address, want in (
            ("http://198.51.100.7:8080", "http://qwen.example.com:8080"),
            ("https://198.51.100.7", "https://qwen.example.com"),
        ):
            gateway = {**GATEWAY, "status": {**GATEWAY["status"], "address": address}}
            assert run_service(xr, eps, gateway).status["address"] == want

    def test_the_two_hop_loopback_is_an_envoy_gateway_backend_on_the_internal_address(
        self,
    ) -> None:
        gateway = {
            **GATEWAY,
            "status": {**GATEWAY["status"], "internalAddress": "envoy.gw.svc.cluster.local:80"},
        }
        res = run_service(
            CANARY,
            [
                endpoint("stable-0", "http://203.0.113.10/team-a/a/0", {"track": "stable"}),
                endpoint("canary-0", "http://203.0.113.11/team-a/b/0", {"track": "canary"}),
            ],
            gateway,
        )
        hop = manifest(res, "backend-hop")
        assert (hop["apiVersion"], hop["kind"]) == ("gateway.envoyproxy.io/v1alpha1", "Backend")
        assert hop["spec"] == {
            "endpoints": [{"fqdn": {"hostname": "envoy.gw.svc.cluster.local", "port": 80}}]
        }

    def test_a_kept_secret_copy_is_judged_by_its_conditions_not_its_reported_data(self) -> None:
        xr = service(endpoints=[{"selector": {"matchLabels": {"model": "qwen"}}}])
        saas = endpoint(
            "saas",
            "https://api.provider.example.com",
            {"model": "qwen"},
            authSecretRef={"name": "provider-key", "key": "api-key"},
        )
        copy = run_service(xr, [saas]).desired["credential-saas"].resource
        failing = {
            **copy,
            "status": {
                "atProvider": {"manifest": {"data": {"credential": "c2VjcmV0"}}},
                "conditions": [{"type": "Ready", "status": "False"}],
            },
        }
        inp = ComposeInput(
            composite=xr,
            observed={"credential-saas": failing},
            required={"gateway": [GATEWAY], "endpoints": [{**saas, "status": {"ready": False}}]},
        )
        res = model_service.compose(inp)
        # Ready=False says the copy does not exist yet, whatever the provider reported.
        assert res.desired["credential-saas"].ready == "False"

    def test_an_unreadable_endpoint_not_routed_to_stays_without_traffic_and_says_so(
        self,
    ) -> None:
        stable = endpoint("stable-0", "http://203.0.113.10", {"track": "stable"})
        odd = {
            **endpoint("canary-0", "http://203.0.113.11", {"track": "canary"}),
            "status": {"ready": "yes"},
        }
        res = run_service(CANARY, [stable, odd])
        assert sorted(res.desired) == ["backend-stable-0", "route"]
        assert conditions(res)["InputsReadable"] == ("False", "Unreadable")
        assert _message(res, "InputsReadable") == (
            "ModelEndpoint canary-0: status.ready 'yes' is not a boolean; not routed to, as before"
        )

    def test_an_endpoint_that_cannot_be_named_holds_with_a_message_saying_so(self) -> None:
        stable = endpoint("stable-0", "http://203.0.113.10", {"track": "stable"})
        nameless = {**stable, "metadata": {**stable["metadata"], "labels": ["x"]}}
        res = run_service(CANARY, [nameless])
        assert _message(res, "InputsReadable") == (
            "a ModelEndpoint fetched for this service does not read (metadata.labels: not an "
            "object of strings): which endpoint it is cannot be told, so the route and "
            "backends are kept as they are until it reads"
        )

    def test_each_composed_object_is_ready_exactly_when_observed_so(self) -> None:
        eps = [endpoint("stable-0", "http://203.0.113.10", {"track": "stable"})]
        first = run_service(CANARY, eps)
        assert {k: d.ready for k, d in first.desired.items()} == {
            "backend-stable-0": "False",
            "route": "False",
        }
        accepted = {"status": {"conditions": [{"type": "Accepted", "status": "True"}]}}
        observed = {
            "backend-stable-0": {
                **first.desired["backend-stable-0"].resource,
                "status": {"atProvider": {"manifest": accepted}},
            },
        }
        inp = ComposeInput(
            composite=CANARY, observed=observed, required={"gateway": [GATEWAY], "endpoints": eps}
        )
        res = model_service.compose(inp)
        assert {k: d.ready for k, d in res.desired.items()} == {
            "backend-stable-0": "True",
            "route": "False",
        }
