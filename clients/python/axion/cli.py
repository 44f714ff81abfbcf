"""`axion`: command-line client of axion-server.

    axion create humanoid.xml --count 8        # prints the new world ids
    axion step --steps 1000 --progress         # steps all of this client's worlds
    axion state --worlds 1,2 --json
    axion snapshot --worlds 1 -o world1.snap && axion restore world1.snap
    axion reset --keyframe home                # every world back to the model's <key name="home">
    axion list ; axion destroy --all ; axion health

The connection comes from --target/--token/--client-id or the environment variables
AXION_TARGET, AXION_AUTH_TOKEN and AXION_CLIENT_ID. Exit status: 0 on success, 1 when the
server reports an error (printed on stderr with its status code), 2 on bad usage.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

from axion import errors
from axion._proto import axion_pb2 as pb
from axion.client import DEFAULT_TARGET, Client
from axion.progress import Progress
from axion.scene import make_scene

# Largest step count sent in one request: the server's default --max_steps_per_request.
MAX_STEPS_PER_REQUEST = 10000


def parse_world_ids(values):
    """World ids from ["1,2", "3"] -> [1, 2, 3]."""
    ids = []
    for value in values or []:
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            try:
                world_id = int(part, 0)
            except ValueError:
                raise argparse.ArgumentTypeError(f"'{part}' is not a world id") from None
            if world_id <= 0:
                raise argparse.ArgumentTypeError(f"'{part}' is not a world id (must be > 0)")
            ids.append(world_id)
    return ids


def make_client(args):
    return Client(
        args.target,
        token=args.token,
        tls=args.tls,
        timeout=args.timeout,
        client_id=args.client_id,
        root_certificates=args.ca_cert,
        certificate_chain=args.client_cert,
        private_key=args.client_key,
        server_name=args.server_name,
    )


def selected_worlds(client, args):
    """--worlds, or every world of this client when none are given."""
    ids = parse_world_ids(args.worlds)
    if ids:
        return ids
    ids = [w.world_id for w in client.list_worlds()]
    if not ids:
        raise errors.NotFound("this client has no worlds (create some with `axion create`)")
    return ids


def print_json(value):
    json.dump(value, sys.stdout, indent=2)
    sys.stdout.write("\n")


def print_table(header, rows):
    widths = [len(h) for h in header]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row)]
    for row in [header] + rows:
        line = "  ".join(c.ljust(w) for c, w in zip(row, widths))
        print(line.rstrip())


def describe_dict(description):
    return {
        "model_name": description.model_name,
        "body_count": description.body_count,
        "joint_position_count": description.joint_position_count,
        "joint_dof_count": description.joint_dof_count,
        "actuator_count": description.actuator_count,
        "file_position_count": description.file_position_count,
        "file_velocity_count": description.file_velocity_count,
        "contact_capacity": description.contact_capacity,
        "timestep": description.timestep,
        "body_names": description.body_names,
        "shape_names": description.shape_names,
        "joints": [vars(j) for j in description.joints],
        "actuators": [vars(a) for a in description.actuators],
        "source_bodies": [
            {"name": b.name, "body": b.body, "offset": b.offset.tolist(), "mocap": b.mocap}
            for b in description.source_bodies
        ],
        "source_joints": [vars(j) for j in description.source_joints],
        "source_sites": [
            {"name": b.name, "body": b.body, "offset": b.offset.tolist(), "mocap": b.mocap}
            for b in description.source_sites
        ],
        "keyframe_names": description.keyframe_names,
        "mocap_names": description.mocap_names,
        "sensor_data_count": description.sensor_data_count,
        "source_sensors": [vars(s) for s in description.source_sensors],
        "tendon_names": description.tendon_names,
    }


# -- subcommands ------------------------------------------------------------------------------


def cmd_create(client, args):
    options = {}
    if args.timestep is not None:
        options["timestep"] = args.timestep
    if args.preconditioner is not None:
        options["preconditioner"] = args.preconditioner
    scene = make_scene(
        args.model,
        format=args.format,
        floating_base=args.floating_base,
        self_collision=args.self_collision,
        inertia_from_collision=args.inertia_from_collision,
        balance_inertia=args.balance_inertia,
        keep_welded_bodies=args.keep_welded_bodies,
        bound_mass=args.bound_mass,
        bound_inertia=args.bound_inertia,
    )
    created = client.create_worlds(scene, args.count, solver_options=options or None)
    for warning in created.warnings:
        print(f"axion: warning: {warning}", file=sys.stderr)
    if args.json:
        print_json(
            {
                "world_ids": created.world_ids,
                "warnings": created.warnings,
                "description": describe_dict(created.description),
            }
        )
    else:
        for world_id in created.world_ids:
            print(world_id)
    return 0


def cmd_list(client, args):
    worlds = client.list_worlds()
    if args.json:
        print_json([vars(w) for w in worlds])
        return 0
    rows = [[str(w.world_id), w.model_name, str(w.step_count), f"{w.time:.6g}"] for w in worlds]
    print_table(["WORLD", "MODEL", "STEPS", "TIME(s)"], rows)
    return 0


def cmd_describe(client, args):
    description = client.describe_world(args.world)
    if args.json:
        print_json(describe_dict(description))
        return 0
    d = description
    print(f"model {d.model_name}: {d.body_count} bodies, {d.joint_position_count} joint "
          f"coordinates, {d.joint_dof_count} DOF, {d.actuator_count} actuators, "
          f"timestep {d.timestep:g} s, contact capacity {d.contact_capacity}")
    rows = [
        [j.name, j.type, str(j.position_offset), str(j.position_count), str(j.dof_offset),
         str(j.dof_count)]
        for j in d.joints
    ]
    print_table(["JOINT", "TYPE", "QPOS", "NQ", "QVEL", "NV"], rows)
    def drives(a):
        if a.tendon >= 0:
            return f"tendon {a.tendon}"
        if a.site_body >= 0:
            return f"site on {d.body_names[a.site_body]}"
        if a.adhesion_body >= 0:
            return f"adhesion of {d.body_names[a.adhesion_body]}"
        joint = d.joints[a.joint]
        return joint.name if joint.dof_count == 1 else f"{joint.name} DOF {a.dof}"

    rows = [
        [a.name, a.type, drives(a),
         f"[{a.ctrl_min:g}, {a.ctrl_max:g}]" if a.ctrl_limited else "unlimited",
         f"[{a.force_min:g}, {a.force_max:g}]" if a.force_limited else "unlimited"]
        for a in d.actuators
    ]
    if rows:
        print_table(["ACTUATOR", "TYPE", "DRIVES", "CTRL RANGE", "FORCE RANGE"], rows)
    # tendons: tendon_state's rows (length, rate)
    rows = [[str(index), name or "(unnamed)"] for index, name in enumerate(d.tendon_names)]
    if rows:
        print_table(["TENDON", "NAME"], rows)
    # the file's bodies that have no body of their own: merged into another, or static
    rows = [
        [b.name, d.body_names[b.body] if b.body >= 0 else "(world)",
         " ".join(f"{v:g}" for v in b.offset)]
        for b in d.source_bodies
        if b.body < 0 or d.body_names[b.body] != b.name
    ]
    if rows:
        print_table(["FILE BODY", "CARRIED BY", "OFFSET (XYZ WXYZ)"], rows)
    rows = [
        [s.name, d.body_names[s.body] if s.body >= 0 else "(world)",
         " ".join(f"{v:g}" for v in s.offset)]
        for s in d.source_sites
    ]
    if rows:
        print_table(["SITE", "CARRIED BY", "OFFSET (XYZ WXYZ)"], rows)
    rows = [[s.name or "(unnamed)", s.type, f"{s.offset}:{s.offset + s.dim}"]
            for s in d.source_sensors]
    if rows:
        print_table(["SENSOR", "TYPE", "SENSOR_DATA"], rows)
    if d.keyframe_names:
        print("keyframes: " + ", ".join(
            f"{index} '{name}'" if name else str(index)
            for index, name in enumerate(d.keyframe_names)))
    if d.mocap_names:
        print("mocap bodies: " + ", ".join(f"{index} '{name}'"
                                           for index, name in enumerate(d.mocap_names)))
    return 0


def cmd_step(client, args):
    ids = selected_worlds(client, args)
    if args.steps < 0:
        raise argparse.ArgumentTypeError("--steps must be >= 0")
    chunk = args.chunk or max(1, min(MAX_STEPS_PER_REQUEST, args.steps // 100 or 1))
    show = True if args.progress else None
    start = time.monotonic()
    with Progress(args.steps, "step", unit="steps", enabled=show) as progress:
        with client.open_step_stream() as stream:
            done = 0
            while done < args.steps:
                count = min(chunk, args.steps - done)
                stream.step(ids, count)
                done += count
                progress.update(count)
    elapsed = time.monotonic() - start
    world_steps = len(ids) * args.steps
    rate = world_steps / elapsed if elapsed > 0 else float("inf")
    if args.json:
        print_json(
            {"worlds": len(ids), "steps": args.steps, "seconds": elapsed, "world_steps_per_s": rate}
        )
    else:
        print(f"stepped {len(ids)} worlds x {args.steps} steps in {elapsed:.3f} s "
              f"({rate:,.0f} world-steps/s)")
    return 0


def _fmt_array(values):
    return np.array2string(
        np.asarray(values), precision=4, separator=", ", threshold=8, max_line_width=10**6
    )


def cmd_state(client, args):
    ids = selected_worlds(client, args)
    fields = args.fields.split(",") if args.fields else ["joint_position", "joint_velocity"]
    obs = client.get_state(ids, observe=fields + ["stats"])
    stats = obs.stats
    if args.json:
        worlds = []
        for index, world_id in enumerate(obs.world_ids):
            entry = {
                "world_id": world_id,
                "step_count": int(stats.step_count[index]),
                "time": float(stats.time[index]),
                "flags": int(stats.flags[index]),
            }
            for field in fields:
                value = getattr(obs, field)
                if field == "contacts":
                    rows = value.world_slice(index)
                    entry[field] = {"body": value.body[rows].tolist(),
                                    "data": value.data[rows].tolist()}
                elif value is not None:
                    entry[field] = np.asarray(value[index]).tolist()
            worlds.append(entry)
        print_json({"worlds": worlds})
        return 0
    header = ["WORLD", "STEPS", "TIME(s)", "FLAGS"] + [f.upper() for f in fields]
    rows = []
    for index, world_id in enumerate(obs.world_ids):
        row = [str(world_id), str(stats.step_count[index]), f"{stats.time[index]:.6g}",
               str(stats.flags[index])]
        for field in fields:
            value = getattr(obs, field)
            if field == "contacts":
                row.append(str(int(value.count[index])))
            else:
                row.append(_fmt_array(value[index]))
        rows.append(row)
    print_table(header, rows)
    return 0


def cmd_snapshot(client, args):
    ids = selected_worlds(client, args)
    snapshots = client.snapshot(ids)
    message = pb.SnapshotResponse(
        snapshots=[pb.WorldSnapshot(world_id=w, data=d) for w, d in snapshots.items()]
    )
    with open(args.output, "wb") as file:
        file.write(message.SerializeToString())
    print(f"saved {len(snapshots)} worlds to {args.output}")
    return 0


def cmd_restore(client, args):
    with open(args.file, "rb") as file:
        data = file.read()
    message = pb.SnapshotResponse()
    try:
        message.ParseFromString(data)
    except Exception as error:  # protobuf raises DecodeError, a subclass of Exception
        raise errors.InvalidArgument(f"{args.file}: not an axion snapshot file ({error})") from None
    if not message.snapshots:
        raise errors.InvalidArgument(f"{args.file}: holds no snapshots")
    targets = parse_world_ids(args.worlds)
    if not targets:
        pairs = [(s.world_id, s.data) for s in message.snapshots]
    elif len(message.snapshots) == 1:
        pairs = [(w, message.snapshots[0].data) for w in targets]
    elif len(targets) == len(message.snapshots):
        pairs = [(w, s.data) for w, s in zip(targets, message.snapshots)]
    else:
        raise errors.InvalidArgument(
            f"--worlds lists {len(targets)} worlds for {len(message.snapshots)} snapshots"
        )
    client.restore(pairs)
    print(f"restored {len(pairs)} worlds: {' '.join(str(w) for w, _ in pairs)}")
    return 0


def cmd_reset(client, args):
    ids = selected_worlds(client, args)
    reset = client.reset(ids, keyframe=args.keyframe)
    for world_id in reset:
        print(world_id)
    return 0


def cmd_destroy(client, args):
    ids = parse_world_ids(args.world_ids)
    if args.all == bool(ids):
        raise argparse.ArgumentTypeError("give world ids or --all")
    destroyed = client.destroy_worlds(None if args.all else ids, all_worlds=args.all)
    for world_id in destroyed:
        print(world_id)
    return 0


def cmd_health(client, args):
    if args.wait:
        try:
            client.wait_until_serving(args.wait, args.service)
        except errors.DeadlineExceeded as error:
            print(f"axion: {error.message}", file=sys.stderr)
            print("NOT_SERVING")
            return 1
    status = client.health(args.service)
    print(status)
    return 0 if status == "SERVING" else 1


# -- argument parsing -------------------------------------------------------------------------


def build_parser():
    parser = argparse.ArgumentParser(
        prog="axion",
        description="Command-line client of the Axion simulation server.",
    )
    env = os.environ
    parser.add_argument("--target", default=env.get("AXION_TARGET", DEFAULT_TARGET),
                        help="server host:port (env AXION_TARGET; default %(default)s)")
    parser.add_argument("--token", default=env.get("AXION_AUTH_TOKEN"),
                        help="bearer token (env AXION_AUTH_TOKEN)")
    parser.add_argument("--client-id", default=env.get("AXION_CLIENT_ID"),
                        help="client identity that owns the worlds (env AXION_CLIENT_ID)")
    parser.add_argument("--tls", action="store_true", help="connect with TLS")
    parser.add_argument("--ca-cert", help="PEM file of the CA to trust (implies --tls)")
    parser.add_argument("--client-cert", help="PEM client certificate chain (mutual TLS)")
    parser.add_argument("--client-key", help="PEM client private key (mutual TLS)")
    parser.add_argument("--server-name", help="expected name in the server certificate")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="deadline of each call in seconds (default %(default)s)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def worlds_option(sub, what):
        sub.add_argument("--worlds", action="append", metavar="IDS",
                         help=f"comma-separated world ids to {what} (default: all of this "
                              "client's worlds); may be repeated")

    sub = commands.add_parser("create", help="create worlds from a model file")
    sub.add_argument("model", help="MJCF (.xml) or URDF (.urdf) file")
    sub.add_argument("--count", type=int, default=1, help="number of worlds (default 1)")
    sub.add_argument("--format", choices=["mjcf", "urdf"], help="model format (default: detect)")
    sub.add_argument("--floating-base", action="store_true",
                     help="URDF: make the root link a free body")
    sub.add_argument("--self-collision", action="store_true",
                     help="URDF: let the robot's links collide with each other")
    sub.add_argument("--inertia-from-collision", action="store_true",
                     help="URDF: take link inertias from the collision geometry (pybullet's "
                          "default)")
    sub.add_argument("--balance-inertia", action="store_true",
                     help="set principal moments that break the triangle inequality to their "
                          "mean (MuJoCo's balanceinertia) instead of refusing the model")
    sub.add_argument("--keep-welded-bodies", action="store_true",
                     help="MJCF: keep each body without joints on a fixed joint of its own "
                          "(default: merged into its parent)")
    sub.add_argument("--bound-mass", type=float, default=0.0,
                     help="MJCF: raise every body's mass to at least this (kg; MuJoCo's "
                          "boundmass)")
    sub.add_argument("--bound-inertia", type=float, default=0.0,
                     help="MJCF: raise every body's principal moments to at least this "
                          "(kg m^2; MuJoCo's boundinertia)")
    sub.add_argument("--timestep", type=float, help="override the time step (s)")
    sub.add_argument("--preconditioner", type=str.lower, choices=["jacobi", "tree"],
                     help="override the preconditioner of the linear solve (default: the model's)")
    sub.add_argument("--json", action="store_true", help="print ids and layout as JSON")
    sub.set_defaults(run=cmd_create)

    sub = commands.add_parser("list", help="list this client's worlds")
    sub.add_argument("--json", action="store_true", help="print JSON")
    sub.set_defaults(run=cmd_list)

    sub = commands.add_parser("describe", help="bodies, joints and actuators of a world")
    sub.add_argument("world", type=int, help="world id")
    sub.add_argument("--json", action="store_true", help="print JSON")
    sub.set_defaults(run=cmd_describe)

    sub = commands.add_parser("step", help="advance worlds")
    worlds_option(sub, "step")
    sub.add_argument("--steps", type=int, default=1, help="steps per world (default 1)")
    sub.add_argument("--chunk", type=int, default=0,
                     help="steps per request (default: about 1%% of --steps)")
    sub.add_argument("--progress", action="store_true",
                     help="show progress on stderr even when it is not a terminal")
    sub.add_argument("--json", action="store_true", help="print the summary as JSON")
    sub.set_defaults(run=cmd_step)

    sub = commands.add_parser("state", help="print world state")
    worlds_option(sub, "read")
    sub.add_argument("--fields", help="comma-separated observations (default "
                     "joint_position,joint_velocity; also body_pose, body_velocity, "
                     "body_contact_force, controls, contacts, and for a model file's worlds "
                     "file_position, file_velocity: MuJoCo's qpos and qvel)")
    sub.add_argument("--json", action="store_true", help="print JSON instead of a table")
    sub.set_defaults(run=cmd_state)

    sub = commands.add_parser("snapshot", help="save worlds' complete state to a file")
    worlds_option(sub, "save")
    sub.add_argument("-o", "--output", required=True, help="snapshot file to write")
    sub.set_defaults(run=cmd_snapshot)

    sub = commands.add_parser("restore", help="restore worlds from a snapshot file")
    sub.add_argument("file", help="file written by `axion snapshot`")
    sub.add_argument("--worlds", action="append", metavar="IDS",
                     help="restore into these worlds instead of the recorded ones (one id per "
                          "snapshot, or any number for a single snapshot)")
    sub.set_defaults(run=cmd_restore)

    sub = commands.add_parser("reset", help="return worlds to their initial state or a keyframe")
    worlds_option(sub, "reset")
    sub.add_argument("--keyframe", metavar="NAME",
                     help="a keyframe of the model (its name, or its index; `axion describe` "
                          "lists them) instead of the initial state")
    sub.set_defaults(run=cmd_reset)

    sub = commands.add_parser("destroy", help="destroy worlds")
    sub.add_argument("world_ids", nargs="*", help="world ids (comma-separated or separate)")
    sub.add_argument("--all", action="store_true", help="destroy all of this client's worlds")
    sub.set_defaults(run=cmd_destroy)

    sub = commands.add_parser("health", help="gRPC health check (exit 0 when SERVING)")
    sub.add_argument("--service", default="",
                     help="service name, e.g. axion.v1.Simulation (default: the server)")
    sub.add_argument("--wait", type=float, default=0.0, metavar="SECONDS",
                     help="wait up to this long for SERVING")
    sub.set_defaults(run=cmd_health)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "step" and args.steps < 0:
        parser.error("--steps must be >= 0")
    if args.command == "create" and args.count < 1:
        parser.error("--count must be >= 1")
    try:
        with make_client(args) as client:
            return args.run(client, args)
    except argparse.ArgumentTypeError as error:
        parser.error(str(error))
    except errors.AxionError as error:
        print(f"axion: {error}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as error:
        print(f"axion: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
