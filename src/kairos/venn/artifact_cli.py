"""`kairos venn artifact-inputs | differential`: the differential harness against the authors'
artifact (SymbioticLab/Venn, fetched and checked out by the user, never a dependency).

    kairos venn artifact-inputs --workload even --seed 1 --out /tmp/vin/even_1
    kairos venn differential --artifact /tmp/venn-artifact --workload even --seeds 1,2,3,4,5
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from kairos.cli_utils import make_console

console = make_console()


def register(group: typer.Typer) -> None:
    @group.command("artifact-inputs")
    def artifact_inputs(
        out: Annotated[Path, typer.Option(help="directory to write trace/ and config/ into")],
        workload: Annotated[str, typer.Option(help="even, small, large, low, high")] = "even",
        seed: Annotated[int, typer.Option(help="the kairos seed (jobs and fleet)")] = 1,
        weeks: Annotated[int, typer.Option(help="5-day trace repetitions (NUM_WEEK)")] = 4,
    ) -> None:
        """Write one kairos workload and device trace in the artifact's input formats."""
        from kairos.venn.differential import prepare

        prepare(workload, seed, out, weeks)
        console.print(f"artifact inputs for {workload} seed {seed} in {out}")

    @group.command("differential")
    def differential_cmd(
        artifact: Annotated[Path, typer.Option(help="a checkout of SymbioticLab/Venn")],
        workload: Annotated[str, typer.Option(help="even, small, large, low, high")] = "even",
        seeds: Annotated[str, typer.Option(help="comma-separated seeds")] = "1,2,3,4,5",
        policies: Annotated[str, typer.Option(help="kairos policies")] = "fifo,srsf,venn-nomatch",
        work: Annotated[Path, typer.Option(help="inputs and artifact outputs")] = Path(
            "results/venn/differential"
        ),
        jobs: Annotated[int, typer.Option("-j", help="artifact runs in parallel")] = 1,
        venn_opts: Annotated[str, typer.Option("--venn", help="VennConfig JSON")] = "{}",
        readings: Annotated[
            str, typer.Option(help="artifact: IRS as the artifact reads it; kairos: defaults")
        ] = "artifact",
    ) -> None:
        """Run kairos (artifact-compatible mode) and the artifact on identical inputs. Kairos's
        IRS takes the artifact's readings (`ARTIFACT_VENN`) unless `--readings kairos`;
        `--venn` overrides single fields on top."""
        from kairos.report import print_table
        from kairos.venn.artifact import ARTIFACT_VENN
        from kairos.venn.differential import ArtifactMissing, check_artifact, compare, differential

        try:
            check_artifact(artifact)
        except ArtifactMissing as exc:
            raise typer.BadParameter(str(exc), param_hint="--artifact") from None
        if readings not in ("artifact", "kairos"):
            raise typer.BadParameter(f"--readings: artifact or kairos, not {readings!r}")
        base = ARTIFACT_VENN if readings == "artifact" else {}

        rows = differential(
            artifact,
            work,
            workload,
            [int(s) for s in seeds.split(",")],
            policies.split(","),
            jobs,
            {**base, **json.loads(venn_opts)},
        )
        print_table(rows, title=f"kairos vs artifact, {workload} (mean JCT, s)")
        summary = compare(rows, "srsf", "venn-nomatch")
        console.print_json(json.dumps(summary))
        out = work / f"differential_{workload}.json"
        out.write_text(json.dumps({"rows": rows, "summary": summary}, indent=1))
        console.print(f"written {out}")
