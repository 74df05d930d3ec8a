"""A lower bound for ``route.stone.get --stone @next-one`` on bench_route's repositories: what any Python
answer that checks every earlier stone's pass against the files must at least do, and nothing else.

Not a driver. Written as bare as Python allows, knowing the benchmark's layout (one route at ``route/``,
every artifact ``<stone>.md``, no artifact globs in guards, no approvals):

- start Python (the same interpreter and site as the installed command);
- list the route's directory and its ``.route/``;
- ask git for the content ids of the route's own files (``git ls-files -s``) and what differs from them
  (``git diff-files``), both at once, leaving ``.route/`` out;
- the artifacts of stones with a record of a pass that git's index does not vouch for (not committed, or
  changed since): ONE ``git hash-object --stdin-paths`` for all of them;
- per stone, in order until one is not passed: look up the ids of its stone file, guard and artifact,
  hash the artifact list and the pass key (one sha256 each), and look the record's name up in the listing.

It parses no guard, reads no record and validates nothing. Run at the repository's top level; prints how many
stones passed before the first that did not.
"""

import os


def start_git(*args, stdin=None):
    read_end, write_end = os.pipe()
    actions = [(os.POSIX_SPAWN_DUP2, write_end, 1), (os.POSIX_SPAWN_CLOSE, read_end)]
    if stdin is not None:
        in_read, in_write = os.pipe()
        actions += [(os.POSIX_SPAWN_DUP2, in_read, 0), (os.POSIX_SPAWN_CLOSE, in_write)]
    pid = os.posix_spawnp("git", ["git", *args], os.environ, file_actions=actions)
    os.close(write_end)
    if stdin is not None:
        os.close(in_read)
        # The bench's paths (≤ 2,000, ~45 KB) fit in the pipe: written first, they cannot block on git.
        with os.fdopen(in_write, "wb") as feed:
            feed.write(stdin)
    return pid, read_end


def answer(started):
    pid, read_end = started
    chunks = []
    while chunk := os.read(read_end, 1 << 20):
        chunks.append(chunk)
    os.close(read_end)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode()


def main():
    import hashlib

    specs = ("--", ":(literal)route", ":(exclude,literal)route/.route")
    index_query = start_git("ls-files", "-s", "-z", *specs)
    modified_query = start_git("diff-files", "--name-only", "-z", *specs)
    names = set(os.listdir("route"))
    records = set(os.listdir("route/.route"))
    stones = sorted(
        (tuple(int(part) for part in name.split(".")[:1]), name[:-6])
        for name in names
        if name.endswith(".stone")
    )
    guards = {name[:-6] for name in names if name.endswith(".guard")}
    index = {}
    for entry in answer(index_query).split("\0"):
        if entry:
            meta, _, path = entry.partition("\t")
            index[path] = meta.split(" ")[1]
    modified = set(answer(modified_query).split("\0"))
    with_pass = {name.partition(".passed.")[0] for name in records if ".passed." in name}
    unvouched = [
        f"route/{stone}.md"
        for _prefix, stone in stones
        if stone in with_pass
        and f"{stone}.md" in names
        and (f"route/{stone}.md" not in index or f"route/{stone}.md" in modified)
    ]
    if unvouched:
        listing = "".join(path + "\n" for path in unvouched).encode()
        ids = answer(start_git("hash-object", "--stdin-paths", stdin=listing))
        index.update(zip(unvouched, ids.split(), strict=True))
    passed = 0
    for _prefix, stone in stones:
        artifact = f"route/{stone}.md"
        if artifact not in index:
            break
        listing = f'[["{artifact}","{index[artifact]}"]]'
        review_input_hash = hashlib.sha256(listing.encode()).hexdigest()
        guard = f'"{index[f"route/{stone}.guard"]}"' if stone in guards else "null"
        key_text = (
            f'{{"approval_id":null,"guard_id":{guard},"review_input_hash":"{review_input_hash}",'
            f'"stone_id":"{index[f"route/{stone}.stone"]}"}}'
        )
        key = hashlib.sha256(key_text.encode()).hexdigest()
        if f"{stone}.passed.{key[:16]}" not in records:
            break
        passed += 1
    print(passed)


main()
