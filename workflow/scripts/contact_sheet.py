"""Adapter: every figure of the run as thumbnails on one page."""

from depthlab.analysis.draw import contact_sheet
from depthlab.core.logs import end_job, to_file

to_file(snakemake.log[0])
contact_sheet(list(snakemake.input), snakemake.output[0])
end_job()
