# Copies of the key figures for the README (docs/figures/, committed; run on the default study).
DOC_FIGURES = ["grad_ratio_by_depth", "increments_by_layer", "omega_vs_theory"]


rule docs_figures:
    """copy the README's key figures from results/figures/ to docs/figures/"""
    input:
        expand("results/figures/{name}.png", name=DOC_FIGURES),
    output:
        expand("docs/figures/{name}.png", name=DOC_FIGURES),
    log:
        "logs/docs_figures.log",
    localrule: True
    conda:
        "../envs/depthlab.yaml"
    message:
        "docs_figures: the README's key figures, copied to docs/figures/"
    script:
        "../scripts/copy_files.py"
