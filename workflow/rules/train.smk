# Training studies (a `training:` block): the corpus, then one train job per (study, arm, job id)
# in place of measure; its shard feeds the same fit -> render stages.
from depthlab.planner.codehash import TRAIN_CODE
from depthlab.vocabulary.corpus import CORPUS_SHA256, SHIPPED
from depthlab.vocabulary.train_settings import training_arms

try:
    TRAINING = training_arms(config, JOBS.values())
except ConfigError as err:
    config_error(err)  # one line (the Snakefile's), before any job runs

# a regex no study name matches when no study trains
TRAINING_STUDIES = "|".join(sorted({study for study, _ in TRAINING})) or "(?!)"
# the shipped corpus is the corpus rule's input unless the config names another source
OTHER_CORPUS = config.get("corpus_url") or config.get("corpus_path")
SHIPPED_CORPUS = (
    []
    if OTHER_CORPUS
    else (
        f"{DEPTHLAB}/{SHIPPED}"
        if DEPTHLAB
        else str(workflow.source_path(f"../../{SHIPPED}"))
    )
)


# The corpus: config `corpus_url` or `corpus_path` (read by the script, so that naming the same
# file differently reruns nothing), else the copy shipped in data/ (no network). Its text's
# sha256 is checked either way (`corpus_sha256` for another corpus).
rule corpus:
    """the training corpus (default: the shipped Tiny Shakespeare), sha256-checked"""
    input:
        SHIPPED_CORPUS,
    output:
        "resources/tinyshakespeare.txt",
    log:
        "logs/corpus.log",
    localrule: True
    conda:
        "../envs/depthlab.yaml"
    params:
        sha256=config.get("corpus_sha256") or CORPUS_SHA256,
    script:
        "../scripts/fetch_corpus.py"


# The final weights are temp(): deleted unless asked for by path.
rule train:
    input:
        corpus="resources/tinyshakespeare.txt",
    output:
        shard=paths.SHARD,
        weights=temp(paths.WEIGHTS),
    log:
        paths.job_log("train"),
    benchmark:
        paths.benchmark("train")
    wildcard_constraints:
        study=TRAINING_STUDIES,
    priority: train_priority
    conda:
        "../envs/depthlab.yaml"
    threads: config["threads"]
    resources:
        mem_mb=train_mem_mb,
        gpu_mem_mb=train_gpu_mem_mb,
        runtime=train_runtime,
    params:
        cells=job_cells,
        training=job_training,
        code=code_hash(TRAIN_CODE),
    script:
        "../scripts/train_job.py"


ruleorder: train > measure
