"""Engine specifics: what a serving engine needs beyond a generic serving pod.

One module per engine concern, each a set of pure edits of the engine
container: `vllm` (recognising vLLM, pointing it at a staged cache) and `ray`
(the multi-node bootstrap vLLM runs on). Every backend stamps engines through
these modules, so a second backend gets the same flags and scripts.
"""
