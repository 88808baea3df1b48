"""A PEP 517 build backend in the standard library only: builds the pure-Python
wheel (and sdist) of baton_client, so installing needs nothing downloaded."""
from __future__ import annotations

import base64
import hashlib
import io
import os
import tarfile
import zipfile

NAME = "baton_client"
DIST = "baton_client"
VERSION = "0.1.0"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TAG = "py3-none-any"


def _metadata() -> str:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as readme:
        description = readme.read()
    return (
        "Metadata-Version: 2.1\n"
        "Name: baton-client\n"
        f"Version: {VERSION}\n"
        "Summary: A client for the baton lock server: locks, read-write locks, semaphores and elections over HTTP\n"
        "License: MIT\n"
        "Requires-Python: >=3.9\n"
        "Description-Content-Type: text/markdown\n\n" + description
    )


def _package_files():
    base = os.path.join(ROOT, NAME)
    for folder, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for file in sorted(files):
            if file.endswith((".py", ".typed")):
                path = os.path.join(folder, file)
                yield path, os.path.relpath(path, ROOT).replace(os.sep, "/")


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _dist_info(files: dict) -> dict:
    info = f"{DIST}-{VERSION}.dist-info"
    extra = {
        f"{info}/METADATA": _metadata().encode(),
        f"{info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: baton-client-backend\nRoot-Is-Purelib: true\nTag: {TAG}\n".encode(),
    }
    return extra


def _write_wheel(wheel_directory: str, files: dict) -> str:
    files = {**files, **_dist_info(files)}
    info = f"{DIST}-{VERSION}.dist-info"
    record = "".join(f"{path},{_digest(data)},{len(data)}\n" for path, data in files.items()) + f"{info}/RECORD,,\n"
    filename = f"{DIST}-{VERSION}-{TAG}.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as wheel:
        for path, data in files.items():
            wheel.writestr(path, data)
        wheel.writestr(f"{info}/RECORD", record)
    return filename


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info = f"{DIST}-{VERSION}.dist-info"
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    for path, data in _dist_info({}).items():
        with open(os.path.join(metadata_directory, path), "wb") as out:
            out.write(data)
    return info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = {}
    for path, name in _package_files():
        with open(path, "rb") as source:
            files[name] = source.read()
    return _write_wheel(wheel_directory, files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # A .pth file puts this directory on sys.path: edits are seen without reinstalling.
    return _write_wheel(wheel_directory, {f"{DIST}.pth": (ROOT + "\n").encode()})


def build_sdist(sdist_directory, config_settings=None):
    base = f"{DIST}-{VERSION}"
    filename = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz") as sdist:
        for relative in ["pyproject.toml", "README.md", "_build/backend.py"] + [name for _, name in _package_files()]:
            sdist.add(os.path.join(ROOT, relative), arcname=f"{base}/{relative}")
        pkg_info = _metadata().encode()
        entry = tarfile.TarInfo(f"{base}/PKG-INFO")
        entry.size = len(pkg_info)
        sdist.addfile(entry, io.BytesIO(pkg_info))
    return filename
