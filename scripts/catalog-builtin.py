#!/usr/bin/env python3
"""Writes the built-in catalog items (controlplane/crates/install/catalog/items/) from the answer-file
presets and the scripts below; run scripts/catalog-index.py controlplane/crates/install/catalog after."""
import json, pathlib
root = pathlib.Path(__file__).resolve().parent.parent / "controlplane/crates/install/catalog"
presets = pathlib.Path(__file__).resolve().parent.parent / "controlplane/crates/install/src/answers/presets"
A = "Bootlane"
def write(item):
    p = root / "items" / item["type"] / f"{item['id']}.json"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(item, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

answers = [
 ("debian", "Debian 12 (preseed)", "preseed", "debian.preseed", ["debian", "preseed", "linux"],
  "Debian installer preseed: locale, keyboard, DHCP network, site mirror, time zone, root password hash, whole first disk (atomic), SSH server and keys; reports progress from preseed/early_command and done from preseed/late_command."),
 ("ubuntu", "Ubuntu Server (autoinstall)", "autoinstall", "ubuntu.yaml", ["ubuntu", "autoinstall", "linux"],
  "Subiquity autoinstall user-data: identity, SSH keys, direct storage layout; installer events through the reporting webhook, done from late-commands, the log from error-commands."),
 ("rocky", "Rocky Linux / RHEL 9 (kickstart)", "kickstart", "rocky.ks", ["rhel", "rocky", "kickstart", "linux"],
  "Anaconda kickstart: served image tree or the Rocky mirror list, LVM autopart on a cleared disk, crypted root password, SSH keys; progress from %pre, done from %post --erroronfail, the log from %onerror."),
 ("opensuse", "openSUSE Leap / SLES 15 (AutoYaST)", "autoyast", "opensuse.xml", ["suse", "autoyast", "linux"],
  "AutoYaST profile: whole disk, base patterns, sshd, encrypted root password and keys; progress from a pre-script, done from a chroot script."),
 ("windows", "Windows (autounattend)", "autounattend", "windows.xml", ["windows", "autounattend"],
  "autounattend.xml for UEFI machines: disk 0 wiped into EFI, MSR and Windows partitions, locale from the site; progress from windowsPE, done from SetupComplete.cmd."),
 ("fcos", "Fedora CoreOS (Ignition)", "ignition", "fcos.ign", ["fedora", "coreos", "ignition", "linux"],
  "Ignition 3.3 config: core user's SSH keys and password hash, host name, time zone, and a oneshot systemd unit reporting the first boot as done."),
 ("cloud-config", "cloud-init (cloud-config)", "cloud-config", "cloud-config.yaml", ["cloud-init", "linux"],
  "#cloud-config for images that boot into cloud-init: host name, time zone, locale, keys, root password hash, site mirror; phone_home reports done."),
]
for id_, name, fmt, f, tags, desc in answers:
    write({"type": "answer-template", "id": id_, "name": name, "version": "1.0.0", "description": desc,
           "author": A, "tags": ["answer-file"] + tags,
           "content": {"format": fmt, "template": (presets / f).read_text(encoding="utf-8")}})

S = {}
S["ssh-authorized-keys"] = ("Install SSH authorized keys", "sh", ["ssh", "security", "linux"],
 "Appends SSH public keys (one per line) to a user's ~/.ssh/authorized_keys (root by default) with the modes sshd requires; keys already present are kept once.",
 [("ssh_user", "The account that gets the keys", "root"), ("ssh_authorized_keys", "SSH public keys, one per line", "")],
r"""#!/bin/sh
# Installs SSH public keys for a user (root by default): appends the keys not yet in
# ~/.ssh/authorized_keys, with the modes sshd insists on.
set -eu
user='{{ ssh_user }}'
keys='{{ ssh_authorized_keys }}'
if [ -z "$keys" ]; then
  echo "no keys given (variable ssh_authorized_keys); nothing to do"
  exit 0
fi
home=$(getent passwd "$user" | cut -d: -f6)
if [ -z "$home" ]; then
  echo "no user $user" >&2
  exit 1
fi
install -d -m 700 "$home/.ssh"
touch "$home/.ssh/authorized_keys"
chmod 600 "$home/.ssh/authorized_keys"
printf '%s\n' "$keys" | while IFS= read -r k; do
  [ -z "$k" ] && continue
  grep -qxF "$k" "$home/.ssh/authorized_keys" || printf '%s\n' "$k" >> "$home/.ssh/authorized_keys"
done
chown -R "$user": "$home/.ssh"
if command -v restorecon >/dev/null 2>&1; then restorecon -R "$home/.ssh" || true; fi
echo "authorized_keys of $user: $(grep -c . "$home/.ssh/authorized_keys") key(s)"
""")
S["timezone-ntp"] = ("Set the time zone and NTP", "sh", ["time", "ntp", "linux"],
 "Sets the time zone and the NTP servers with whichever time daemon is installed (chrony or systemd-timesyncd) and turns time synchronisation on.",
 [("timezone", "IANA time zone, e.g. Europe/Berlin", "Etc/UTC"), ("ntp_servers", "NTP servers, separated by spaces (empty: keep the system's)", "pool.ntp.org")],
r"""#!/bin/sh
# Sets the time zone and the NTP servers, with whichever time daemon the system has
# (chrony or systemd-timesyncd), and turns time synchronisation on.
set -eu
tz='{{ timezone }}'
ntp='{{ ntp_servers }}'
if [ ! -e "/usr/share/zoneinfo/$tz" ]; then
  echo "unknown time zone $tz" >&2
  exit 1
fi
if ! { command -v timedatectl >/dev/null 2>&1 && timedatectl set-timezone "$tz" 2>/dev/null; }; then
  ln -sf "/usr/share/zoneinfo/$tz" /etc/localtime
  echo "$tz" > /etc/timezone
fi
if [ -n "$ntp" ]; then
  if [ -f /etc/chrony/chrony.conf ] || [ -f /etc/chrony.conf ]; then
    conf=/etc/chrony.conf
    [ -f /etc/chrony/chrony.conf ] && conf=/etc/chrony/chrony.conf
    sed -i -e '/^server /d' -e '/^pool /d' "$conf"
    for s in $ntp; do echo "server $s iburst" >> "$conf"; done
    systemctl restart chronyd 2>/dev/null || systemctl restart chrony 2>/dev/null || true
  else
    mkdir -p /etc/systemd/timesyncd.conf.d
    printf '[Time]\nNTP=%s\n' "$ntp" > /etc/systemd/timesyncd.conf.d/bootlane.conf
    systemctl restart systemd-timesyncd 2>/dev/null || true
  fi
fi
timedatectl set-ntp true 2>/dev/null || true
echo "time zone $tz; NTP servers: ${ntp:-unchanged}"
""")
S["serial-console"] = ("Enable the serial console", "sh", ["console", "serial", "linux"],
 "Adds console=tty0 console=<port>,<speed>n8 to the kernel arguments (grubby or /etc/default/grub), sets GRUB's serial terminal, and enables a login getty on the port.",
 [("serial_port", "Serial device name", "ttyS0"), ("serial_speed", "Baud rate", "115200")],
r"""#!/bin/sh
# Enables a serial console: kernel arguments (console=tty0 console=<port>,<speed>n8),
# GRUB's serial terminal, and a login getty on the port.
set -eu
port='{{ serial_port }}'
speed='{{ serial_speed }}'
args="console=tty0 console=${port},${speed}n8"
if command -v grubby >/dev/null 2>&1; then
  grubby --update-kernel=ALL --remove-args=console --args="$args"
elif [ -f /etc/default/grub ]; then
  f=/etc/default/grub
  sed -i -e '/^GRUB_CMDLINE_LINUX=/ s/ *console=[^ "]*//g' -e "/^GRUB_CMDLINE_LINUX=/ s/\"\$/ $args\"/" "$f"
  sed -i -e '/^GRUB_TERMINAL=/d' -e '/^GRUB_SERIAL_COMMAND=/d' "$f"
  echo 'GRUB_TERMINAL="console serial"' >> "$f"
  echo "GRUB_SERIAL_COMMAND=\"serial --unit=${port#ttyS} --speed=$speed\"" >> "$f"
  if command -v update-grub >/dev/null 2>&1; then
    update-grub
  elif command -v grub2-mkconfig >/dev/null 2>&1; then
    grub2-mkconfig -o /boot/grub2/grub.cfg
  fi
else
  echo "neither grubby nor /etc/default/grub: kernel arguments left unchanged" >&2
fi
systemctl enable "serial-getty@${port}.service" 2>/dev/null || true
echo "serial console on $port at $speed baud (active after a reboot)"
""")
S["apt-upgrade"] = ("apt: upgrade every package", "sh", ["updates", "apt", "debian", "ubuntu", "linux"],
 "Brings a Debian or Ubuntu system up to date without questions (keeping changed configuration files), removes packages no longer needed, and says when a reboot is required.",
 [],
r"""#!/bin/sh
# Brings a Debian or Ubuntu system up to date (non-interactive; changed configuration
# files are kept), then removes packages no longer needed. Fails when apt fails.
set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get -y -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold dist-upgrade
apt-get -y autoremove --purge
apt-get clean
if [ -f /var/run/reboot-required ]; then echo "a reboot is required"; fi
""")
S["dnf-upgrade"] = ("dnf: upgrade every package", "sh", ["updates", "dnf", "rhel", "rocky", "fedora", "linux"],
 "Brings a Fedora, RHEL, Rocky or AlmaLinux system up to date, removes packages no longer needed, and says when a reboot is required.",
 [],
r"""#!/bin/sh
# Brings a Fedora, RHEL, Rocky or AlmaLinux system up to date, then removes packages no
# longer needed. Fails when dnf fails.
set -eu
dnf -y upgrade --refresh
dnf -y autoremove
dnf clean all
if command -v needs-restarting >/dev/null 2>&1 && ! needs-restarting -r >/dev/null 2>&1; then
  echo "a reboot is required"
fi
""")
S["winrm-enable"] = ("Windows: enable WinRM", "powershell", ["windows", "winrm", "remote-management"],
 "Enables PowerShell remoting over WinRM HTTP (5985): public networks become private, the listener is created, the firewall allows it on every profile; basic authentication only when winrm_allow_basic is true.",
 [("winrm_allow_basic", "true to allow basic authentication (off by default)", "false")],
r"""# Enables WinRM over HTTP (port 5985) for remote management: public networks become
# private (Enable-PSRemoting refuses them), the listener and firewall rule are created,
# and basic authentication is allowed only when winrm_allow_basic is "true".
$ErrorActionPreference = 'Stop'
Get-NetConnectionProfile | Where-Object NetworkCategory -eq 'Public' | Set-NetConnectionProfile -NetworkCategory Private
Enable-PSRemoting -Force -SkipNetworkProfileCheck
Set-Service -Name WinRM -StartupType Automatic
if (-not (Get-NetFirewallRule -Name 'Bootlane-WinRM-HTTP' -ErrorAction SilentlyContinue)) {
  New-NetFirewallRule -Name 'Bootlane-WinRM-HTTP' -DisplayName 'WinRM HTTP (Bootlane)' -Protocol TCP -LocalPort 5985 -Action Allow -Profile Any | Out-Null
}
if ('{{ winrm_allow_basic }}' -eq 'true') {
  Set-Item -Path WSMan:\localhost\Service\Auth\Basic -Value $true
}
$listeners = @(Get-ChildItem WSMan:\localhost\Listener).Count
Write-Output "WinRM enabled: $listeners listener(s)"
""")
scripts = {}
for id_, (name, typ, tags, desc, vars_, body) in S.items():
    content = {"type": typ, "description": desc, "content": body,
               "variables": [{"name": n, "description": d, "default": dv} for n, d, dv in vars_]}
    scripts[id_] = (name, content)
    write({"type": "script", "id": id_, "name": name, "version": "1.0.0", "description": desc,
           "author": A, "tags": ["post-install"] + tags, "content": content})

B = [
 ("debian-base", "Debian base", {"family": "debian"}, ["ssh-authorized-keys", "timezone-ntp", "apt-upgrade"], ["debian", "linux"],
  "A freshly installed Debian machine (copy it with the family ubuntu for Ubuntu): the site's SSH keys for root, time zone and NTP, every package up to date."),
 ("rhel-base", "RHEL/Rocky/Fedora base", {"family": "rhel"}, ["ssh-authorized-keys", "timezone-ntp", "dnf-upgrade"], ["rhel", "rocky", "fedora", "linux"],
  "A freshly installed RHEL-family machine: the site's SSH keys for root, time zone and NTP, every package up to date."),
 ("linux-serial-server", "Linux server with a serial console", {}, ["ssh-authorized-keys", "serial-console"], ["serial", "console", "linux"],
  "Headless Linux servers reached through a serial console or IPMI SOL: SSH keys and the serial console (kernel, GRUB, getty)."),
 ("windows-base", "Windows base", {"family": "windows"}, ["winrm-enable"], ["windows", "winrm"],
  "A freshly installed Windows machine made manageable remotely: WinRM over HTTP with the firewall open."),
]
for id_, name, osf, ids, tags, desc in B:
    variables = {}
    for s in ids:
        for v in scripts[s][1]["variables"]:
            variables.setdefault(v["name"], v["default"])
    content = {"description": desc, "os_filter": osf, "variables": variables,
               "scripts": [dict(id=s, name=scripts[s][0], **scripts[s][1]) for s in ids]}
    write({"type": "baseline", "id": id_, "name": name, "version": "1.0.0", "description": desc,
           "author": A, "tags": ["post-install"] + tags, "content": content})

P = [
 ("local-disk-netbootxyz", "Local disk, netboot.xyz as rescue", ["rescue", "netboot.xyz"],
  "Boots the local disk after 10 seconds; the second entry chains netboot.xyz (installers and rescue tools from the internet).",
  {"description": "Local disk by default; netboot.xyz as a rescue entry.", "timeout_secs": 10, "entries": [
    {"label": "Boot from local disk", "type": "local", "is_default": True},
    {"label": "netboot.xyz (installers and rescue tools)", "type": "chain", "url": "https://boot.netboot.xyz"}]}),
 ("debian-12-installer", "Debian 12 installer (netboot cache)", ["debian", "installer"],
  "Boots the Debian 12 network installer from the netboot catalog's cache (the first boot fills it), with the local disk as the default after 30 seconds.",
  {"description": "Debian 12 netboot installer through the netboot cache; local disk by default.", "timeout_secs": 30, "entries": [
    {"label": "Boot from local disk", "type": "local", "is_default": True},
    {"label": "Install Debian 12 (bookworm, amd64)", "type": "linux", "kernel": "netboot/debian/12/amd64/linux",
     "initrds": ["netboot/debian/12/amd64/initrd.gz"], "cmdline": "auto=true priority=critical"}]}),
]
for id_, name, tags, desc, content in P:
    write({"type": "profile", "id": id_, "name": name, "version": "1.0.0", "description": desc,
           "author": A, "tags": ["boot-menu"] + tags, "content": content})

N = [
 ("debian-serial-console", "Debian installer on the serial console", "debian", "console=ttyS0,115200n8",
  "Netboot overlay for Debian: the installer talks on ttyS0 at 115200 baud (headless servers, IPMI SOL)."),
 ("ubuntu-serial-console", "Ubuntu installer on the serial console", "ubuntu", "console=ttyS0,115200n8",
  "Netboot overlay for Ubuntu Server: the installer talks on ttyS0 at 115200 baud."),
 ("rocky-text-serial", "Rocky installer in text mode on the serial console", "rocky", "inst.text console=ttyS0,115200n8",
  "Netboot overlay for Rocky Linux: Anaconda in text mode on ttyS0 at 115200 baud."),
]
for id_, name, distro, args, desc in N:
    write({"type": "netboot", "id": id_, "name": name, "version": "1.0.0", "description": desc,
           "author": A, "tags": ["overlay", "serial", distro],
           "content": {"distro": distro, "extra_args": args, "extra_initrds": []}})
