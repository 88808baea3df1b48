"""A Python lock holder driven over stdin, for the cross-process tests of
test/clients/python.test.ts (hand-over with Node, SIGSTOP, restarts).

Reads one JSON command per line, answers one JSON line each:
  {"op": "lock", "name", "ttl", "wait"}  -> {"event": "granted", "token"} | {"event": "error", "code", "type"}
  {"op": "act", "file"}                   -> checks the lease first; appends "<token>" to file only if still held
  {"op": "wait_lost", "timeout"}          -> {"event": "lost", "lost", "reason"}
  {"op": "release"}                       -> {"event": "released", "released"}
Settings: BATON_SERVER, BATON_TOKEN.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if "BATON_CLIENT_INSTALLED" not in os.environ:
    sys.path.insert(0, os.path.dirname(HERE))

import baton_client  # noqa: E402


def say(**fields):
    print(json.dumps(fields), flush=True)


def main():
    client = baton_client.Client(os.environ["BATON_SERVER"], token=os.environ.get("BATON_TOKEN"))
    lease = None
    for line in sys.stdin:
        command = json.loads(line)
        op = command["op"]
        try:
            if op == "lock":
                lease = client.lock(command["name"], ttl=command.get("ttl", 30), wait=command.get("wait", 10))
                say(event="granted", token=str(lease.token))
            elif op == "act":
                # The first thing after reading the command: is the lease still ours?
                lease.check()
                with open(command["file"], "a") as resource:
                    resource.write(f"{lease.token}\n")
                say(event="act", acted=True)
            elif op == "wait_lost":
                lost = lease.lost.wait(command["timeout"])
                say(event="lost", lost=lost, reason=lease.lost_reason)
            elif op == "release":
                say(event="released", released=lease.release())
            elif op == "exit":
                break
        except baton_client.BatonError as error:
            say(event="error" if op != "act" else "act", acted=False, code=error.code, type=type(error).__name__, message=error.message)
    client.close()


if __name__ == "__main__":
    main()
