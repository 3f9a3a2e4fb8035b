"""``autobench run --runtime slurm --in-allocation`` without a cluster: the job it runs in, read
from Slurm's environment, and the refusals (outside a job; the flag on another runtime).  The
script run in a real allocation is tests/experiment/test_experiment_slurm.py (integration: an
experiment's 2-node array tasks)."""

from __future__ import annotations

import pytest

from autobench.cli import main
from autobench.errors import RunError
from autobench.run.slurm import allocation


def test_the_job_this_runs_in_is_read_from_slurms_environment() -> None:
    assert allocation({"SLURM_JOB_ID": "41", "SLURM_JOB_NODELIST": "abnode[1-2]"}) == ("41", "abnode[1-2]")
    task = {"SLURM_JOB_ID": "44", "SLURM_ARRAY_JOB_ID": "42", "SLURM_ARRAY_TASK_ID": "2"}
    assert allocation(task) == ("42_2", None)  # an array task by its array id and index
    assert allocation({"SLURM_JOB_ID": "44", "SLURM_ARRAY_JOB_ID": "42", "SLURM_JOB_NODELIST": ""}) == ("44", None)
    assert allocation({"SLURM_JOB_ID": "44", "SLURM_ARRAY_TASK_ID": "2"}) == ("44", None)  # both or the job's id
    with pytest.raises(RunError) as info:
        allocation({"SLURM_ARRAY_JOB_ID": "42"})
    assert str(info.value) == (
        "--in-allocation: not inside a Slurm job (SLURM_JOB_ID is not set) (hint: run it from an sbatch script "
        "or salloc, or leave --in-allocation out to submit a job)"
    )


def test_in_allocation_is_for_the_slurm_runtime_only(tmp_path, capsys) -> None:
    code = main(["run", str(tmp_path / "r.yaml"), "--runtime", "process", "--in-allocation"])
    err = capsys.readouterr().err
    assert code == 2 and err.strip().splitlines() == [
        "error: --in-allocation is for --runtime slurm, not process (hint: add --runtime slurm)"
    ]
