"""All-hosts cells in summary.md and summary.html: per cell and op, each host's first-done and last-done (seconds
from the cell's start, when its first and its last stream finished), its rate and whether it straggles; for the cell
the tail (last host done − first host done) and the stonewall figure (what every host had moved when the first
finished, over that time: IOR's stonewalling). From the records' `hosts` (fsbench.measurement.all_hosts.by_host)."""

import re

from fsbench.analysis.aggregate import record_paths
from fsbench.report.document import Heading, Para, Table, blocks_html, blocks_markdown, number
from fsbench.toolkit.records import read_json
from fsbench.toolkit.sizes import format_size


def hosts_blocks(paths: list[str]) -> list:
    """A heading, a note and a table per all-hosts cell, op and repeat; [] where the campaign has none."""
    blocks = []
    for path in record_paths(paths):
        rec = read_json(path)
        if "hosts" not in rec:
            continue
        row, cell = rec["row"], rec["hosts"]
        name = f"{row['array']}/{row['target']} {format_size(int(row['block_size']))} {row['op']} rep {row['rep']}"
        if row.get("shared_file"):
            name += ", one shared file"
        blocks += [
            Heading(3, name),
            Para(
                f"All hosts: {number(row['mb_s'])} MB/s over the common wall time; stonewall "
                f"{number(cell['stonewall_mb_s'])} MB/s ({number(cell['stonewall_bytes'] / 1e6)} MB moved when the "
                f"first host finished, at {cell['first_done_s']:.3f} s); last host done at "
                f"{cell['last_done_s']:.3f} s, a tail of {cell['tail_s']:.3f} s."
            ),
            Table(
                ["host", "first done (s)", "last done (s)", "MB/s", "straggler"],
                [
                    [
                        host,
                        f"{h['first_done_s']:.3f}",
                        f"{h['last_done_s']:.3f}",
                        number(h["mb_s"]),
                        h.get("straggler", ""),
                    ]
                    for host, h in cell["hosts"].items()
                ],
            ),
        ]
    if not blocks:
        return []
    intro = Para(
        "Per host of each all-hosts cell: when its first and its last stream finished (seconds from the cell's start), "
        "its own rate, and `straggler` where it is far below the other hosts (more than 25 % below their median, and "
        "with three or more others by more than 3 × their median absolute deviation)."
    )
    return [Heading(2, "All-hosts cells, per host"), intro, *blocks]


def with_hosts_markdown(text: str, blocks: list) -> str:
    return text if not blocks else text.rstrip("\n") + "\n\n" + blocks_markdown(blocks)


def with_hosts_html(page: str, blocks: list) -> str:
    """summary.html with the blocks' HTML inserted at the end of its body (before its closing note)."""
    if not blocks:
        return page
    fragment = re.search(r"<body>\n(.*)\n</body>", blocks_html(blocks, ""), re.S).group(1)
    at = page.rfind('<p class="note">') if '<p class="note">' in page else page.rfind("</body>")
    return page[:at] + fragment + "\n" + page[at:]
