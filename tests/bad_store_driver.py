"""Run the real command line once per argv given (a JSON list as the only argument), in this one
process, and print one JSON line per run: exit code, stdout, stderr. Used by
test_every_command_bad_stores.py, which runs it as another user; anything that escapes the command
line's own handling is printed as a Traceback, which the test refuses."""

from __future__ import annotations

import io
import json
import sys
import traceback


def run_one(argv: list[str]) -> dict[str, object]:
    from distilld.cli import main

    out, err = io.BytesIO(), io.BytesIO()
    saved = sys.stdout, sys.stderr
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    sys.stderr = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
    try:
        code: object = main(argv)
    except SystemExit as done:
        code = done.code
    except BaseException:  # noqa: BLE001 - what the user would see as a traceback
        traceback.print_exc()
        code = "escaped"
    finally:
        for wrapper in (sys.stdout, sys.stderr):
            wrapper.flush()
            wrapper.detach()  # keep the bytes: closing the wrapper would close them
        sys.stdout, sys.stderr = saved
    return {"code": code, "out": out.getvalue().decode("utf-8", "replace"),
            "err": err.getvalue().decode("utf-8", "replace")}


def main() -> None:
    for argv in json.loads(sys.argv[1]):
        print(json.dumps(run_one(argv)), flush=True)


if __name__ == "__main__":
    main()
