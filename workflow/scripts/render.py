"""Adapter: draw one declared table or figure from the fits of the arms it reads."""

from depthlab.analysis.draw import draw
from depthlab.core.logs import end_job, to_file
from depthlab.studies import BY_NAME, drawing

to_file(snakemake.log[0])
target = BY_NAME[snakemake.params.name]
draw(target, drawing(target), list(snakemake.input), dict(snakemake.params.options),
     dict(snakemake.output), dict(snakemake.params.blocks))
end_job()
