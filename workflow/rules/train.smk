# Training studies (a `training:` block): the corpus, then one train job per (study, arm, job id)
# in place of measure; its shard feeds the same fit -> render stages (PLAN.training: each arm's
# training settings).


# The corpus: config `corpus_url` or `corpus_path` (read by the script, so that naming the same
# file differently reruns nothing), else the copy shipped in data/ (no network). Its text's
# sha256 is checked either way (`corpus_sha256` for another corpus).
rule corpus:
    """the training corpus (default: the shipped Tiny Shakespeare), sha256-checked"""
    input:
        PLAN.shipped_corpus,
    output:
        "resources/tinyshakespeare.txt",
    log:
        "logs/corpus.log",
    localrule: True
    conda:
        "../envs/depthlab.yaml"
    params:
        sha256=PLAN.corpus_sha256,
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
        study=PLAN.training_studies,
    priority: PLAN.train_priority
    conda:
        "../envs/depthlab.yaml"
    threads: config["threads"]
    resources:
        mem_mb=PLAN.train_mem_mb,
        gpu_mem_mb=PLAN.train_gpu_mem_mb,
        runtime=PLAN.train_runtime,
    params:
        cells=PLAN.job_cells,
        training=PLAN.job_training,
        code=PLAN.train_hash,
    script:
        "../scripts/train_job.py"


ruleorder: train > measure
