"""Round 19 of issue 35: families read from their tools' sources after issue35n's freeze (syslog-escaped records,
records a paste ran together, callers' generation frames, the scheduler's ignored prompt, torch's heartbeat monitor,
huggingface_hub's offline mode, LoRA target modules, the Ascend runtime, Ray's unhandled task error).
The samples are written from each tool's format; paths, ids and numbers are invented."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage import classify_text
from ansible_collections.repro.vllm.tests.unit.plugins.module_utils.logstage.corpus_cases import brief
from ansible_collections.repro.vllm.plugins.module_utils.logstage._logstage_parse import joined_cuts

_V0_TAG = "#033[1;36m(VllmWorkerProcess pid=7)#033[0;0m ERROR 01-02 03:04:05 [multiproc_worker_utils.py:239] "


def _answer(text):
    return brief(classify_text(text))


def test_a_record_rsyslog_escaped_is_read_as_the_record():
    # rsyslog writes ESC as #033 and CR as #015: the worker's frames are read once the escapes are decoded
    text = "".join(_V0_TAG + line + "#015\n" for line in (
        'Traceback (most recent call last):',
        '  File "/venv/lib/python3.12/site-packages/vllm/worker/model_runner.py", line 1359, in _dummy_run',
        '    max_mm_tokens = self.mm_registry.get_max_multimodal_tokens(',
    ))
    assert _answer(text)[:3] == ("engine_init", "other", "high")
    # without the escapes nothing changes; an issue number that looks like one is left as it is
    assert classify_text("INFO 01-02 03:04:05 [api_server.py:1] see #0123 for the port\n")["stage"] == "none"


def test_records_a_paste_ran_together_are_read_one_by_one():
    text = ('INFO:     10.0.0.1:5 - "POST /v1/chat/completions HTTP/1.1" 200 OK INFO 01-02 03:04:05 engine.py:275] '
            'Added request chatcmpl-1. INFO 01-02 03:04:15 metrics.py:455] Avg prompt throughput: 1.0 tokens/s, '
            'Running: 1 reqs. ERROR 01-02 03:04:20 serving_chat.py:193] Error in preprocessing prompt inputs '
            'ERROR 01-02 03:04:20 serving_chat.py:193] Traceback (most recent call last): ERROR 01-02 03:04:20 '
            'serving_chat.py:193] ValueError: the prompt is not valid\n')
    assert _answer(text)[:2] == ("request", "other")
    # never between a process tag and its record, nested tags included; a line of one record is not cut
    tagged = ("(EngineCore pid=1) (RayWorkerWrapper pid=2) ERROR 01-02 03:04:05 [worker_base.py:622] " + "x" * 200)
    assert joined_cuts(tagged) == []
    two = "ERROR 01-02 03:04:05 [a.py:1] first " + "y" * 200 + " WARNING 01-02 03:04:06 [b.py:2] second"
    assert [two[c:c + 7] for c in joined_cuts(two)] == ["WARNING"]


def test_the_scheduler_ignoring_a_long_prompt_was_serving():
    line = "WARNING 01-02 03:04:05 scheduler.py:648] Input prompt (36000 tokens) is too long and exceeds limit of 1000\n"
    assert _answer(line) == ("request", "other", "high", 1)
    # beside a failure of the server it is a consequence, never the cause
    crash = "ERROR 01-02 03:04:06 engine.py:1] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    assert _answer(line + crash)[1::2] == ("oom", 2)


def test_the_heartbeat_monitor_is_a_hang_whose_stage_the_line_does_not_show():
    text = ("[rank1]:[E ProcessGroupNCCL.cpp:1316] [PG 2 Rank 1] Heartbeat monitor timed out! Process will be "
            "terminated after dumping debug info. workMetaList_.size()=3\n"
            "[rank1]:[F ProcessGroupNCCL.cpp:1169] [PG 2 Rank 1] ProcessGroupNCCL's watchdog got stuck for 600 seconds "
            "without making progress in monitoring enqueued collectives.\n")
    assert _answer(text) == ("unknown", "timeout", None, 1)


def test_the_hub_in_offline_mode_is_a_missing_file_of_the_config():
    text = ("huggingface_hub.errors.OfflineModeIsEnabled: Cannot reach https://huggingface.co/api/models/org/model: "
            "offline mode is enabled. To disable it, please unset the `HF_HUB_OFFLINE` environment variable.\n")
    assert _answer(text) == ("config", "missing_file", "medium", 1)


def test_a_lora_adapter_whose_modules_do_not_fit_is_loaded_for_a_request():
    text = ("ValueError: While loading /adapters/a1, expected target modules in ['q_proj', 'v_proj'] but received "
            "['visual.proj']. Please verify that the loaded LoRA module is correct\n")
    assert _answer(text) == ("request", "other", "medium", 1)


def test_the_ascend_runtime_failing_to_open_a_device():
    text = ("(EngineCore pid=5)         rtGetDeviceCount execution failed, reason=driver error:internal error"
            "[FUNC:FuncErrorReason][FILE:error_message_manage.cc][LINE:65]\n"
            "(EngineCore pid=5)         get device count failed, runtime result = 507899.[FUNC:ReportCallError]"
            "[FILE:log_inner.cpp][LINE:148]\n")
    assert _answer(text) == ("cuda_init", "cuda_error", "medium", 1)
    # an indented source line of a traceback is still not an error of its own
    assert classify_text("    rtSetDevice execution failed, reason=x\n")["stage"] == "none"


def test_ray_s_unhandled_task_error_names_the_generation_step():
    text = ("(TaskRunner pid=5) Unhandled error (suppress with 'RAY_IGNORE_UNHANDLED_ERRORS=1'): "
            "ray::WorkerDict.actor_rollout_generate_sequences() (pid=6, ip=10.0.0.2, actor_id=ab12, repr=<W>)\n"
            "(TaskRunner pid=5)            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n")
    assert _answer(text)[:2] == ("request", "other")
    # verl's init_model is not generation: the same header names no request there
    init = text.replace("actor_rollout_generate_sequences", "actor_rollout_init_model")
    assert classify_text(init)["stage"] != "request"


def test_lm_eval_runs_requests_through_a_model_it_built_before():
    text = ("Traceback (most recent call last):\n"
            '  File "/venv/lib/python3.11/site-packages/lm_eval/evaluator.py", line 296, in simple_evaluate\n'
            "    results = evaluate(\n"
            '  File "/venv/lib/python3.11/site-packages/lm_eval/evaluator.py", line 468, in evaluate\n'
            "    resps = getattr(lm, reqtype)(cloned_reqs)\n")
    assert _answer(text)[:2] == ("request", "other")
    frames = ('  File "/venv/lib/python3.10/site-packages/lm_eval/models/vllm_causallms.py", line 493, in _parse_logprobs\n'
              "    continuation_logprobs_dicts = [\n")
    assert _answer(frames)[0] == "request"


def test_multimodal_sizing_and_the_tokenizer_wrapper_are_start_up_frames():
    budget = ("Traceback (most recent call last):\n"
              '  File "/venv/lib/python3.12/site-packages/vllm/multimodal/encoder_budget.py", line 87, in __init__\n'
              "    all_mm_max_toks_per_item = get_mm_max_toks_per_item(\n"
              '  File "/venv/lib/python3.12/site-packages/vllm/multimodal/registry.py", line 256, in get_dummy_mm_inputs\n'
              "    mm_inputs = processor.apply(\n")
    assert _answer(budget)[0] == "engine_init"
    tok = ('  File "/venv/lib/python3.11/site-packages/vllm/transformers_utils/tokenizer.py", line 99, in '
           "get_cached_tokenizer\n    tokenizer.all_special_tokens_extended)\n"
           "AttributeError: Qwen2Tokenizer has no attribute all_special_tokens_extended\n")
    assert _answer(tok)[:3] == ("config", "other", "high")


def test_ray_s_task_error_is_placed_by_the_remote_traceback_printed_after_it():
    # Python's traceback of ray.get, Ray's "RayTaskError(...): ray::...()" line, then the remote task's frames and
    # its exception: the trainer called the rollout's generation
    text = ("Traceback (most recent call last):\n"
            '  File "/venv/lib/python3.10/site-packages/ray/_private/worker.py", line 930, in get_objects\n'
            "    raise value.as_instanceof_cause()\n"
            "ray.exceptions.RayTaskError(ActorDiedError): ray::TaskRunner.run() (pid=11, ip=10.0.0.3, actor_id=cd34)\n"
            '  File "/work/verl/trainer/ppo/ray_trainer.py", line 910, in fit\n'
            "    gen_batch_output = self.actor_rollout_wg.generate_sequences(gen_batch)\n"
            '  File "/work/verl/single_controller/ray/base.py", line 49, in func\n'
            "    output = ray.get(output)\n"
            "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n")
    assert _answer(text) == ("request", "engine_dead", "high", 4)
    # the same remote frames without a step they name: the wrapper stays where the log does not say
    other = text.replace("gen_batch_output = self.actor_rollout_wg.generate_sequences(gen_batch)", "self.save()")
    assert _answer(other)[:2] == ("unknown", "engine_dead")
