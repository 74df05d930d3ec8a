"""A lower bound for ``route.verify --all`` on bench_verify's repository: the unavoidable work and no more.

Not a checker. It is what any Python implementation of the gate must at least do on this machine, written
as bare as Python allows, so that the benchmark can say how much of the target's budget is gone before a
single check is made:

- start Python (the same interpreter and site as the installed command);
- ask git every question the gate cannot do without, the independent ones at once, and read the answers:
  where the repository is and its hash (``git rev-parse``: the gate cannot assume it runs at the top level
  of a sha1 repository), whether its history is cut (a shallow clone's cut-off commit must not vouch for an
  approval: asked in the same ``rev-parse``), the routes (``--all``: every ``*.stone`` git tracks or would
  track), the index (``git ls-files -v -s``), what differs from it (``git diff-files``: the gate's question,
  cheaper than ``git status``) and, since this repository holds approvals, the history of the approval
  markers; then, once that history names them, what else the approval commits changed (an approval commit
  must change nothing but approvals);
- per stone: read its guard and parse it as YAML, list its artifact directory, look the artifacts' content
  ids up in the index, hash the (path, id) list, find its pass record by name in the ``.route/`` listing and
  read it and every record file it names.

Parsing the guards is work no gate can skip: a guard is YAML, and which files a stone's pass covers (its
``artifacts:``) and what must have judged it are in there, so a gate that does not parse every guard fully
vouches for what it did not read. The floor parses them as the gate does, with PyYAML's pure-Python safe
loader (libyaml reads some texts PyYAML refuses, see ``routedriver.userfile``), and pays for importing
PyYAML. It validates nothing, reports nothing but a count, and knows the layout of bench_verify's repository
(one ``$route/art/NN/*.md`` glob per guard, every route's stones in ``route/``). Run from the repository's
top level; prints how many stones' artifact hashes match their markers.
"""

import os


def start_git(*args):
    """(pid, read end of its stdout): git runs while Python goes on."""
    read_end, write_end = os.pipe()
    actions = [(os.POSIX_SPAWN_DUP2, write_end, 1), (os.POSIX_SPAWN_CLOSE, read_end)]
    pid = os.posix_spawnp("git", ["git", *args], os.environ, file_actions=actions)
    os.close(write_end)
    return pid, read_end


def answer(started):
    pid, read_end = started
    chunks = []
    while chunk := os.read(read_end, 1 << 20):
        chunks.append(chunk)
    os.close(read_end)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode()


def blob_id(path):
    """A changed file's content id, as git would give it (none changes in the benchmark's repository)."""
    import hashlib

    with open(path, "rb") as file:
        data = file.read()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def main():
    where_query = start_git("rev-parse", "--show-toplevel", "--show-object-format", "--is-shallow-repository")
    routes_query = start_git(
        "ls-files", "-z", "--cached", "--others", "--exclude-standard", ":(glob)**/*.stone"
    )
    index_query = start_git("ls-files", "-v", "-s", "-z")
    modified_query = start_git("diff-files", "--name-only", "-z")
    markers = "--", ":(glob)**/.route/*.approved"
    history_query = start_git("log", "-z", "--raw", "--no-abbrev", "--format=%x01%H%x00%ae", *markers)
    import hashlib

    import yaml

    answer(where_query)
    assert {name.rpartition("/")[0] for name in answer(routes_query).split("\0") if name} == {"route"}

    index = {}
    for entry in answer(index_query).split("\0"):
        if entry:
            meta, _, path = entry.partition("\t")
            index[path] = meta.split(" ")[-2]  # "H 100644 <id> 0": the tag, mode, id, stage
    changed = set(answer(modified_query).split("\0"))
    route, state = "route", "route/.route"
    records = os.listdir(state)
    matching = 0
    for stone in sorted(name[:-6] for name in os.listdir(route) if name.endswith(".stone")):
        with open(f"{route}/{stone}.guard", encoding="utf-8") as file:
            guard = yaml.load(file.read(), Loader=yaml.SafeLoader)
        pattern = guard["artifacts"][0].replace("$route", route)
        directory, suffix = pattern.rsplit("/*", 1)
        paths = [f"{directory}/{name}" for name in sorted(os.listdir(directory)) if name.endswith(suffix)]
        ids = [blob_id(path) if path in changed else index[path] for path in paths]
        listing = '[["' + '"],["'.join(map('","'.join, zip(paths, ids, strict=True))) + '"]]'
        review_input_hash = hashlib.sha256(listing.encode()).hexdigest()
        head = f"{stone}.passed."
        with open(
            f"{state}/{next(name for name in records if name.startswith(head))}", encoding="utf-8"
        ) as file:
            marker = file.read().splitlines()
        for line in marker:
            if line.startswith("file: "):
                with open(f"{state}/{line[6:]}", "rb") as file:
                    hashlib.sha256(file.read())
        if os.path.exists(f"{state}/{stone}.approved"):
            with open(f"{state}/{stone}.approved", "rb") as file:
                hashlib.sha256(file.read())
        matching += f"review_input_hash: {review_input_hash}" in marker
    approvals = {chunk.split("\0", 1)[0] for chunk in answer(history_query).split("\x01")[1:]}
    answer(
        start_git("log", "--no-walk=unsorted", "-z", "-m", "--name-only", "--format=%x01%H", *approvals, "--")
    )
    print(matching)


main()
