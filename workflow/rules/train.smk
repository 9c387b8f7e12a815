# Training studies (a `training:` block): the corpus, then one train job per (study, arm, job id)
# in place of measure; its shard feeds the same aggregate -> fit -> render stages.
from depthlab.corpus import CORPUS_SHA256, CORPUS_URL
from depthlab.training_config import TRAIN_MODULES, training_arms

try:
    TRAINING = training_arms(config, JOBS.values())
except ConfigError as err:
    sys.exit(f"config error: {err}")  # one line, as common.smk does

TRAIN_CODE = code_hash(TRAIN_MODULES)
# a regex no study name matches when no study trains
TRAINING_STUDIES = "|".join(sorted({study for study, _ in TRAINING})) or "(?!)"


# The corpus comes from config `corpus_path` (read by the script, so that naming the same file
# differently reruns nothing) or else from the URL; the sha256 is checked either way.
rule corpus:
    """Tiny Shakespeare from corpus_path or its URL, sha256-checked"""
    output:
        "resources/tinyshakespeare.txt",
    log:
        "logs/corpus.log",
    localrule: True
    conda:
        "../../envs/depthlab.yaml"
    params:
        url=CORPUS_URL,
        sha256=CORPUS_SHA256,
    script:
        "../scripts/fetch_corpus.py"


# The final weights are temp(): deleted unless asked for by path.
rule train:
    input:
        corpus="resources/tinyshakespeare.txt",
    output:
        shard="results/runs/{study}/{arm}/{job}.parquet",
        weights=temp("results/weights/{study}/{arm}/{job}.pt"),
    log:
        "logs/train/{study}/{arm}/{job}.log",
    benchmark:
        "results/benchmarks/train/{study}/{arm}/{job}.tsv"
    wildcard_constraints:
        study=TRAINING_STUDIES,
    conda:
        "../../envs/depthlab.yaml"
    threads: config["threads"]
    resources:
        mem_mb=4000,
    params:
        cells=job_cells,
        training=job_training,
        code=TRAIN_CODE,
    script:
        "../scripts/train_job.py"


ruleorder: train > measure
