#!/usr/bin/env python3
"""The fixed corpora: the same sentence pairs and the same plain text on any Debian 12.

scripts/mo_pairs.py reads the message catalogs installed, so its pairs depend on the machine.
This script makes the corpora the README reports instead, whatever is installed: it downloads
the fixed list of Debian 12 (bookworm) packages each corpus is made from
(scripts/corpus/NAME.packages) into a cache, without installing them, takes the files it needs
out into a directory of its own, makes the corpus, writes OUT/NAME/MANIFEST and compares it
with the committed one (scripts/corpus/NAME.ARCH.manifest, or NAME.all.manifest for a text whose
packages are all Architecture: all, the same on every host). Two kinds of corpus, by their list:

- a language (de, zh_CN): English-LANG sentence pairs from the packages' LANG message catalogs,
  with mo_pairs.py's filters and split, in OUT/LANG/{train,dev,test}.tsv;
- a text (fortunes, fortunes-zh), whose list names a directory of fortune files: the documents
  of those files, cleaned and split by fortune_text.py, in OUT/NAME/{train,dev,test}.txt.

    python3 scripts/corpus.py de zh_CN fortunes fortunes-zh   # out/de/train.tsv, ..., out/fortunes/MANIFEST

It needs apt-get and dpkg-deb (any Debian 12), the Debian archive key
(/usr/share/keyrings/debian-archive-keyring.gpg) and, unless every package is in the cache
already, the network: apt runs on a package list of its own under CACHE/apt, so the system's
lists, packages and sources stay untouched, and root is not needed.

Exit status: 0 when every corpus is byte for byte the one the README reports, 1 when a corpus
was made but differs (the differences are printed), 2 when none could be made.
"""
import argparse
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fortune_text  # noqa: E402  (the text corpora: reading, cleaning and splitting fortune files)
import mo_pairs  # noqa: E402  (the filters and the split, shared with the installed-catalog corpus)

SPEC_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
SUITES = [("debian", "bookworm"), ("debian", "bookworm-updates"), ("debian-security", "bookworm-security")]


class Failure(Exception):
    """A reason the corpus cannot be made, worded for the person who ran the script."""


# --- the packages: a list of its own, downloaded by a private apt ------------------------------


def read_package_list(path):
    """[(name, version)] from lines "NAME VERSION  # comment", and the directory of fortune
    files a text corpus is made of, from its line "fortune-files: DIR" (None for a language,
    whose list has none). The colon cannot be mistaken for a package: Debian's names have none."""
    if not os.path.exists(path):
        known = sorted(os.path.basename(p)[:-len(".packages")]
                       for p in glob.glob(os.path.join(os.path.dirname(path), "*.packages")))
        raise Failure(f"no package list {path}: the corpora with one are {', '.join(known) or 'none'}")
    packages, fortune_dir = [], None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            if fields[0] == "fortune-files:" and len(fields) == 2:
                fortune_dir = fields[1].strip("/")
                continue
            if len(fields) != 2 or fields[0].endswith(":"):
                raise Failure(f"{path}:{number}: expected NAME VERSION, got {line.strip()!r}")
            packages.append((fields[0], fields[1]))
    return packages, fortune_dir


def deb_file_name(name, version, arch):
    """The name apt-get download gives the file (an epoch's ':' written as %3a)."""
    return f"{name}_{version.replace(':', '%3a')}_{arch}.deb"


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class PrivateApt:
    """apt-get with its own sources (Debian 12's three suites), lists, status and cache under
    DIR, for one architecture: the system's are neither read nor written."""

    def __init__(self, directory, arch, mirror):
        self.directory = os.path.abspath(directory)
        self.arch = arch
        self.mirror = mirror.rstrip("/")
        self.updated = False

    def options(self):
        d = self.directory
        return ["-o", f"Dir::Etc::SourceList={d}/sources.list", "-o", "Dir::Etc::SourceParts=/nonexistent",
                "-o", f"Dir::State::Lists={d}/lists", "-o", f"Dir::State::status={d}/status",
                "-o", f"Dir::Cache={d}/cache", "-o", f"APT::Architecture={self.arch}",
                "-o", f"APT::Architectures={self.arch}", "-o", "Debug::NoLocking=1"]

    def run(self, program, *args, cwd=None):
        command = [program, *self.options(), *args]
        return subprocess.run(command, cwd=cwd, capture_output=True, text=True)

    def update(self):
        if self.updated:
            return
        if not os.path.exists(KEYRING):
            raise Failure(f"no Debian archive key {KEYRING}: install debian-archive-keyring")
        for sub in ("lists/partial", "cache/archives/partial"):
            os.makedirs(os.path.join(self.directory, sub), exist_ok=True)
        open(os.path.join(self.directory, "status"), "a").close()
        with open(os.path.join(self.directory, "sources.list"), "w") as f:
            for archive, suite in SUITES:
                f.write(f"deb [signed-by={KEYRING}] {self.mirror}/{archive} {suite} main\n")
        print(f"reading Debian 12's package lists for {self.arch} from {self.mirror} ...", flush=True)
        result = self.run("apt-get", "-q", "update")
        failed = [line for line in (result.stdout + result.stderr).splitlines()
                  if line.startswith(("Err:", "E:", "W: Failed", "W: Some"))]
        if result.returncode != 0 or failed:
            raise Failure(f"cannot read the package lists from {self.mirror} (no network?):\n  "
                          + "\n  ".join(failed or result.stderr.strip().splitlines()))
        self.updated = True

    def versions(self, names):
        """{name: every version the archive offers for the architecture or 'all', newest first}."""
        result = self.run("apt-cache", "madison", *names)
        offered = {name: [] for name in names}
        for fields in (line.split("|") for line in result.stdout.splitlines()):
            if len(fields) >= 3 and fields[0].strip() in offered:
                offered[fields[0].strip()].append(fields[1].strip())
        return offered

    def download(self, pins, into):
        """apt-get download NAME=VERSION..., into INTO (apt checks each file against the signed lists)."""
        pinned = [f"{name}={version}" for name, version in pins]
        result = self.run("apt-get", "-q", "download", *pinned, cwd=into)
        if result.returncode != 0:
            raise Failure("apt-get download failed:\n  " + "\n  ".join(result.stderr.strip().splitlines()))


def fetch(packages, cache, apt, expected):
    """The .deb of each package, from the cache or else the archive: a list of dicts (name,
    version, arch, path, sha256, made_from), where made_from is the version the list pins when
    the archive no longer has it and another one was taken."""
    debs_dir = os.path.join(cache, "debs")
    os.makedirs(debs_dir, exist_ok=True)
    chosen = {name: version for name, version in packages}
    missing = [name for name, version in packages
               if cached_deb(debs_dir, name, version, apt.arch, expected) is None]
    if missing:
        apt.update()
        offered = apt.versions(missing)
        for name in missing:
            if not offered[name]:
                raise Failure(f"the package {name} is not in Debian 12's archive for {apt.arch}")
            if chosen[name] not in offered[name]:
                chosen[name] = offered[name][0]
                print(f"!!! {name} {dict(packages)[name]} is no longer in the archive: taking "
                      f"{chosen[name]} instead (offered: {', '.join(offered[name])}); the manifest "
                      "will say so", flush=True)
        print(f"downloading {len(missing)} packages into {debs_dir} ...", flush=True)
        apt.download([(name, chosen[name]) for name in missing], debs_dir)
    fetched = []
    for name, pinned in packages:
        # Not checked against the expected manifest again: a sha256 that still differs is reported.
        deb = cached_deb(debs_dir, name, chosen[name], apt.arch, {})
        if deb is None:
            raise Failure(f"apt-get download gave no {deb_file_name(name, chosen[name], apt.arch)}")
        fetched.append({"name": name, "version": chosen[name], "path": deb, "sha256": sha256_of(deb),
                        "arch": deb.rsplit("_", 1)[1][:-len(".deb")],
                        "made_from": pinned if chosen[name] != pinned else None})
    return fetched


def cached_deb(debs_dir, name, version, arch, expected):
    """The cached .deb of NAME VERSION for ARCH (or 'all'), unless its sha256 differs from the
    one the expected manifest gives (then it is removed, to be downloaded again)."""
    for deb_arch in (arch, "all"):
        path = os.path.join(debs_dir, deb_file_name(name, version, deb_arch))
        if not os.path.exists(path):
            continue
        want = expected.get(("package", name), "").split()
        if want[:2] == [version, deb_arch] and want[2] != "sha256=" + sha256_of(path):
            print(f"{shown(path)}: not the file the manifest names, downloading it again")
            os.remove(path)
            return None
        return path
    return None


# --- the catalogs: only LANG's .mo files, out of each .deb -------------------------------------


def extract_catalogs(debs, languages_of, locale_dir):
    """Writes LOCALE_DIR/LANG/LC_MESSAGES/*.mo from the packages' usr/share/locale (the files
    mo_pairs.py reads in /usr/share/locale), taking from each package only the languages whose
    list names it (LANGUAGES_OF: package name -> languages). One pass over each package.
    Returns {language: {file name: (package, symlink target or None)}}."""
    languages = sorted(set().union(*languages_of.values()))
    for lang in languages:
        shutil.rmtree(os.path.join(locale_dir, lang), ignore_errors=True)
        os.makedirs(os.path.join(locale_dir, lang, "LC_MESSAGES"))
    wanted = re.compile(r"^\.?/?usr/share/locale/([^/]+)/LC_MESSAGES/([^/]+\.mo)$")
    owners = {lang: {} for lang in languages}
    for deb in debs:
        for archive, member in members_of(deb):
            match = wanted.match(member.name)
            if match and match.group(1) in languages_of[deb["name"]]:
                lang, file_name = match.groups()
                target_dir = os.path.join(locale_dir, lang, "LC_MESSAGES")
                owners[lang][file_name] = extract_one(archive, member, target_dir, file_name, deb, owners[lang])
    return owners


def members_of(deb):
    """Each member of a .deb's file system, in order, with the archive to read it from, streamed
    from dpkg-deb (nothing is unpacked to disk). Raises Failure when dpkg-deb cannot read it."""
    unpack = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", deb["path"]], stdout=subprocess.PIPE)
    try:
        with tarfile.open(fileobj=unpack.stdout, mode="r|") as archive:
            for member in archive:
                yield archive, member
    except tarfile.TarError:
        pass  # dpkg-deb failed too, said below
    if unpack.wait() != 0:
        raise Failure(f"dpkg-deb could not read {deb['path']} (remove it from the cache and run again)")


def extract_one(archive, member, target_dir, file_name, deb, owners):
    """Writes one catalog (a file, or a symbolic link beside it); returns (package, link target)."""
    if file_name in owners:
        raise Failure(f"{file_name} is in two packages: {owners[file_name][0]} and {deb['name']}")
    path = os.path.join(target_dir, file_name)
    if member.issym():
        if "/" in member.linkname:
            raise Failure(f"{deb['name']}: {file_name} links outside its directory ({member.linkname})")
        os.symlink(member.linkname, path)
        return (deb["name"], member.linkname)
    if member.islnk():  # a hard link to a catalog taken before, in the same directory
        shutil.copyfile(os.path.join(target_dir, os.path.basename(member.linkname)), path)
    elif member.isfile():
        with open(path, "wb") as f:
            shutil.copyfileobj(archive.extractfile(member), f)
    else:
        raise Failure(f"{deb['name']}: {member.name} is neither a file nor a link")
    return (deb["name"], None)


# --- the texts: only the fortune files of one directory, out of each .deb ----------------------


def extract_fortune_files(debs, fortune_dir, target_dir):
    """Writes TARGET_DIR/FILE for each file directly in FORTUNE_DIR of the packages, but for
    strfile's .dat indexes and symbolic links (Debian's FILE.u8 links name the file itself).
    Returns {file name: package}."""
    shutil.rmtree(target_dir, ignore_errors=True)
    os.makedirs(target_dir)
    wanted = re.compile(r"^\.?/?" + re.escape(fortune_dir) + r"/([^/]+)$")
    owners = {}
    for deb in debs:
        for archive, member in members_of(deb):
            match = wanted.match(member.name)
            if match and not match.group(1).endswith(".dat") and (member.isfile() or member.islnk()):
                file_name = match.group(1)
                owners[file_name] = extract_one(archive, member, target_dir, file_name, deb, owners)
    return {file_name: package for file_name, (package, _) in owners.items()}


# --- the manifest: what went in, what came out -------------------------------------------------


def manifest_lines(lang, arch, debs, catalogs, locale_dir, made, out):
    lines = [f"language {lang}", f"architecture {arch}", f"python {sys.version.split()[0]}"]
    for deb in debs:
        note = f"  # made from {deb['made_from']}" if deb["made_from"] else ""
        lines.append(f"package {deb['name']} {deb['version']} {deb['arch']} sha256={deb['sha256']}{note}")
    for file_name, (package, link) in sorted(catalogs.items()):
        path = os.path.join(locale_dir, lang, "LC_MESSAGES", file_name)
        content = f"-> {link}" if link else f"sha256={sha256_of(path)}"
        lines.append(f"catalog {file_name} {package} {content}")
    lines.append(f"catalogs read {made['read']}")
    lines.append(" ".join(["catalogs skipped", str(len(made["skipped"])), *made["skipped"]]))
    for part in ("train", "dev", "test"):
        lines.append(f"pairs {part} {made['pairs'][part]}")
    for part in ("train", "dev", "test"):
        lines.append(f"file {part}.tsv sha256={sha256_of(os.path.join(out, part + '.tsv'))}")
    return lines


MANIFEST_HEADER = """\
# The corpus of scripts/corpus.py (docs/corpus.md): one "KIND NAME VALUE" line each, for
# the packages (version, architecture, sha256 of the .deb), the catalogs taken from them, the
# catalogs mo_pairs.py read and skipped, the pairs in each part and the sha256 of each file.
"""


def text_manifest_lines(name, arch, debs, sources, source_dir, made, out):
    """The manifest of a text corpus. Its architecture is "all" when every package is
    (Architecture: all, the same .deb everywhere): the manifest is then the same on any host."""
    if all(deb["arch"] == "all" for deb in debs):
        arch = "all"
    lines = [f"text {name}", f"architecture {arch}", f"python {sys.version.split()[0]}"]
    for deb in debs:
        note = f"  # made from {deb['made_from']}" if deb["made_from"] else ""
        lines.append(f"package {deb['name']} {deb['version']} {deb['arch']} sha256={deb['sha256']}{note}")
    for file_name, package in sorted(sources.items()):
        lines.append(f"source {file_name} {package} sha256={sha256_of(os.path.join(source_dir, file_name))}")
    lines.append(f"sources read {made['read']}")
    lines.append(" ".join(["sources skipped", str(len(made["skipped"])), *made["skipped"]]))
    lines.append(f"documents read {made['documents']}")
    for reason, count in made["dropped"].items():
        lines.append(f"dropped {reason} {count}")
    for step, count in made["changed"].items():
        lines.append(f"changed {step} {count}")
    for measure in ("documents", "lines", "words", "characters", "distinct-characters", "bytes"):
        for part in fortune_text.PARTS:
            lines.append(f"{measure} {part} {made['parts'][part][measure]}")
    for part in fortune_text.PARTS:
        lines.append(f"file {part}.txt sha256={sha256_of(os.path.join(out, part + '.txt'))}")
    return arch, lines


TEXT_MANIFEST_HEADER = """\
# The text corpus of scripts/corpus.py (docs/corpus.md): one "KIND NAME VALUE" line each, for
# the packages (version, architecture, sha256 of the .deb), the fortune files taken from them
# (source), the files read and skipped, the documents read and dropped, the lines each cleaning
# step changed, the size of each part and the sha256 of each file.
"""

# The lines that make the corpus: when they match, the train, dev and test files are the same
# bytes, whatever packages they came from.
CORPUS_KINDS = ("catalogs", "pairs", "sources", "documents", "dropped", "changed", "lines", "words",
                "characters", "distinct-characters", "bytes", "file")


def parse_manifest(path):
    """{(kind, name): the rest of the line} of a manifest file, {} if there is none."""
    if not os.path.exists(path):
        return {}
    entries = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("  #", 1)[0].rstrip("\n")
            if line.strip() and not line.startswith("#"):
                fields = line.split(" ", 2)
                if len(fields) == 2:  # "language de", "architecture amd64", "python 3.11.2"
                    fields = [fields[0], "", fields[1]]
                entries[(fields[0], fields[1])] = fields[2] if len(fields) == 3 else ""
    return entries


def differences(actual, expected):
    """Lines "what: expected X, made Y" for every entry that differs, corpus entries first."""
    found = []
    for corpus_first in (True, False):
        for key in sorted(set(actual) | set(expected)):
            if (key[0] in CORPUS_KINDS) != corpus_first or key[0] in ("architecture", "python"):
                continue
            want, got = expected.get(key, "(none)"), actual.get(key, "(none)")
            if want != got:
                found.append(f"{key[0]} {key[1]}: expected {want}, made {got}")
    return found


def shown(path):
    """PATH as the person who ran the script would type it: relative, when it is below here."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def compare(name, arch, manifest_path, spec_dir):
    """Prints how the corpus just made compares with the committed one; True when identical."""
    expected_path = os.path.join(spec_dir, f"{name}.{arch}.manifest")
    if not os.path.exists(expected_path):
        others = sorted(glob.glob(os.path.join(spec_dir, f"{name}.*.manifest")))
        if not others:
            print(f"{name}: no committed manifest {shown(expected_path)} to compare with")
            return False
        expected_path = others[0]
        print(f"{name}: no manifest for {arch}: comparing with {shown(expected_path)}, whose .deb "
              "sha256s are another architecture's")
    actual, expected = parse_manifest(manifest_path), parse_manifest(expected_path)
    found = differences(actual, expected)
    listed = "".join(f"  {line}\n" for line in found)
    if not any(line.split()[0] in CORPUS_KINDS for line in found):
        print(f"{name}: identical to the corpus the README reports: every count and file sha256 "
              f"of {shown(manifest_path)} is that of {shown(expected_path)}")
        if found:
            print(f"{name}: made from other packages or files than {shown(expected_path)} names, "
                  f"with the same result:\n{listed}", end="")
        return True
    print(f"{name}: DIFFERS from the corpus the README reports ({shown(manifest_path)} against "
          f"{shown(expected_path)}):\n{listed}", end="")
    if actual.get(("python", "")) != expected.get(("python", "")):
        print("  (and another Python: the filters use its Unicode tables, mo_pairs.py its catalog reader)")
    return False


# --- start to end ------------------------------------------------------------------------------


def make_corpora(args, arch):
    """Downloads and extracts what every corpus needs (each package once), then makes each
    corpus; True when all are identical to the committed ones."""
    lists = {name: read_package_list(os.path.join(args.spec_dir, f"{name}.packages"))
             for name in args.corpora}
    pins, corpora_of, expected = {}, {}, {}
    for name, (packages, _) in lists.items():
        for package, version in packages:
            if pins.setdefault(package, version) != version:
                raise Failure(f"the package lists pin {package} both at {pins[package]} and at {version}")
            corpora_of.setdefault(package, set()).add(name)
        # A text corpus of Architecture: all packages has one manifest for every host, NAME.all.
        for manifest_arch in (arch, "all"):
            expected.update(parse_manifest(os.path.join(args.spec_dir, f"{name}.{manifest_arch}.manifest")))
    start = time.monotonic()
    apt = PrivateApt(os.path.join(args.cache, "apt"), arch, args.mirror)
    debs = fetch(list(pins.items()), args.cache, apt, expected)
    fetched = time.monotonic()
    languages = [name for name in args.corpora if lists[name][1] is None]
    texts = [name for name in args.corpora if lists[name][1] is not None]
    languages_of = {deb["name"]: corpora_of[deb["name"]] & set(languages) for deb in debs}
    locale_dir = os.path.join(args.cache, "locale")
    catalogs = extract_catalogs([deb for deb in debs if languages_of[deb["name"]]], languages_of, locale_dir)
    sources = {name: extract_fortune_files([deb for deb in debs if name in corpora_of[deb["name"]]],
                                           lists[name][1], os.path.join(args.cache, "text", name))
               for name in texts}
    extracted = time.monotonic()
    size = sum(os.path.getsize(deb["path"]) for deb in debs)
    taken = " and ".join(kind for kind, names in (("catalogs", languages), ("fortune files", texts)) if names)
    print(f"{len(debs)} packages for {arch} ({size / 1e6:.1f} MB of .deb files): {fetched - start:.1f} s to "
          f"download (or find in {args.cache}), {extracted - fetched:.1f} s to take out their {taken}",
          flush=True)
    identical = True
    for name in args.corpora:
        debs_of = [deb for deb in debs if name in corpora_of[deb["name"]]]
        if name in texts:
            identical &= make_text(name, debs_of, sources[name], os.path.join(args.cache, "text", name),
                                   args, arch)
        else:
            identical &= make_language(name, debs_of, catalogs[name], locale_dir, args, arch)
    return identical


def make_language(lang, debs, catalogs, locale_dir, args, arch):
    """Pairs, manifest and comparison of one language, from its catalogs under LOCALE_DIR."""
    start = time.monotonic()
    out = os.path.join(args.out, lang)
    made = mo_pairs.make_corpus(lang, out, locale_dir)
    manifest_path = os.path.join(out, "MANIFEST")
    with open(manifest_path, "w", encoding="utf-8") as f:
        f.write(MANIFEST_HEADER)
        lines = manifest_lines(lang, arch, debs, catalogs, locale_dir, made, out)
        f.write("".join(line + "\n" for line in lines))
    print(f"{lang}: {len(debs)} packages, {len(catalogs)} catalogs, {time.monotonic() - start:.1f} s "
          f"to pair; {manifest_path}")
    return compare(lang, arch, manifest_path, args.spec_dir)


def make_text(name, debs, sources, source_dir, args, arch):
    """Text files, manifest and comparison of one text corpus, from its fortune files in SOURCE_DIR."""
    start = time.monotonic()
    out = os.path.join(args.out, name)
    made = fortune_text.make_corpus(source_dir, out)
    manifest_path = os.path.join(out, "MANIFEST")
    manifest_arch, lines = text_manifest_lines(name, arch, debs, sources, source_dir, made, out)
    with open(manifest_path, "w", encoding="utf-8") as f:
        f.write(TEXT_MANIFEST_HEADER)
        f.write("".join(line + "\n" for line in lines))
    print(f"{name}: {len(debs)} packages, {len(sources)} fortune files, {time.monotonic() - start:.1f} s "
          f"to read; {manifest_path}")
    return compare(name, manifest_arch, manifest_path, args.spec_dir)


def host_architecture():
    if shutil.which("dpkg") is None:
        raise Failure("dpkg not found: this script needs Debian 12 (bookworm), or --arch")
    result = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True, check=True)
    return result.stdout.strip()


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="See docs/corpus.md for the corpus and the manifest format.")
    parser.add_argument("corpora", nargs="+", metavar="NAME",
                        help="de, zh_CN, fortunes or fortunes-zh (a corpus with a package list in "
                             "--spec-dir)")
    parser.add_argument("--out", default="out",
                        help="writes OUT/NAME/{train,dev,test}.tsv (a language) or .txt (a text) and "
                             "MANIFEST (default: out)")
    parser.add_argument("--cache", default=os.path.join("out", "corpus-cache"),
                        help="for the .deb files, apt's lists, the catalogs and the fortune files "
                             "(default: out/corpus-cache)")
    parser.add_argument("--arch", help="the Debian architecture of the .deb files (default: the host's)")
    parser.add_argument("--mirror", default="http://deb.debian.org",
                        help="a mirror with debian/ and debian-security/ (default: http://deb.debian.org)")
    parser.add_argument("--spec-dir", default=SPEC_DIR,
                        help="NAME.packages and the expected NAME.ARCH.manifest (default: scripts/corpus)")
    return parser.parse_args()


def main():
    args = parse_args()
    try:
        for tool, package in (("apt-get", "apt"), ("apt-cache", "apt"), ("dpkg-deb", "dpkg")):
            if shutil.which(tool) is None:
                raise Failure(f"{tool} not found: this script needs Debian's {package} (Debian 12, bookworm)")
        identical = make_corpora(args, args.arch or host_architecture())
    except (Failure, OSError) as failure:  # OSError: a directory that cannot be made, a full disk
        print(f"corpus.py: {failure}", file=sys.stderr)
        sys.exit(2)
    sys.exit(0 if identical else 1)


if __name__ == "__main__":
    main()
