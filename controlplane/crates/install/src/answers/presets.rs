//! Built-in answer-file presets: real starting points for each format, each with its
//! installer's native report-back hook (preseed `early_command`/`late_command`,
//! kickstart `%pre`/`%post --erroronfail`/`%onerror`, autoinstall `reporting` webhook,
//! `early-`/`late-`/`error-commands`, AutoYaST pre/chroot scripts, Windows
//! `SetupComplete.cmd`, an Ignition oneshot systemd unit, cloud-init `phone_home`). The
//! texts are files beside this module (`presets/`); the tests render each with sample
//! values and run its format's validator. No state.

use serde::Serialize;
use utoipa::ToSchema;

use super::AnswerFormat;

/// One built-in preset (`GET /netboot/answer-templates/presets`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Preset {
    /// Stable key (`debian`, `ubuntu`, ...), usable as `preset` in `POST`.
    pub key: &'static str,
    /// Suggested template name.
    pub name: &'static str,
    /// Format.
    pub format: AnswerFormat,
    /// What it installs and how it reports back.
    pub description: &'static str,
    /// The template text.
    pub content: &'static str,
}

/// Every preset, in display order.
pub const PRESETS: &[Preset] = &[
    Preset {
        key: "debian",
        name: "Debian 12 (preseed)",
        format: AnswerFormat::Preseed,
        description: "Debian installer preseed: locale, keyboard, DHCP network, site mirror, time zone, \
                      root password hash, whole first disk (atomic), SSH server and keys; reports progress \
                      from preseed/early_command and done from preseed/late_command.",
        content: include_str!("presets/debian.preseed"),
    },
    Preset {
        key: "ubuntu",
        name: "Ubuntu Server (autoinstall)",
        format: AnswerFormat::Autoinstall,
        description: "Subiquity autoinstall user-data: identity, SSH keys, direct storage layout; installer \
                      events through the reporting webhook, done from late-commands, the log from error-commands.",
        content: include_str!("presets/ubuntu.yaml"),
    },
    Preset {
        key: "rocky",
        name: "Rocky Linux / RHEL 9 (kickstart)",
        format: AnswerFormat::Kickstart,
        description: "Anaconda kickstart: served image tree or the Rocky mirror list, LVM autopart on a cleared \
                      disk, crypted root password, SSH keys; progress from %pre, done from %post --erroronfail, \
                      the log from %onerror.",
        content: include_str!("presets/rocky.ks"),
    },
    Preset {
        key: "opensuse",
        name: "openSUSE Leap / SLES 15 (AutoYaST)",
        format: AnswerFormat::Autoyast,
        description: "AutoYaST profile: whole disk, base patterns, sshd, encrypted root password and keys; \
                      progress from a pre-script, done from a chroot script.",
        content: include_str!("presets/opensuse.xml"),
    },
    Preset {
        key: "windows",
        name: "Windows (autounattend)",
        format: AnswerFormat::Autounattend,
        description: "autounattend.xml for UEFI machines: disk 0 wiped into EFI, MSR and Windows partitions, \
                      locale from the site; progress from windowsPE, done from SetupComplete.cmd.",
        content: include_str!("presets/windows.xml"),
    },
    Preset {
        key: "fcos",
        name: "Fedora CoreOS (Ignition)",
        format: AnswerFormat::Ignition,
        description: "Ignition 3.3 config: core user's SSH keys and password hash, host name, time zone, and a \
                      oneshot systemd unit reporting the first boot as done.",
        content: include_str!("presets/fcos.ign"),
    },
    Preset {
        key: "cloud-config",
        name: "cloud-init (cloud-config)",
        format: AnswerFormat::CloudConfig,
        description: "#cloud-config for images that boot into cloud-init: host name, time zone, locale, keys, \
                      root password hash, site mirror; phone_home reports done.",
        content: include_str!("presets/cloud-config.yaml"),
    },
];

/// The preset with this key.
pub fn find(key: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.key == key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answers::{
        config::AnswersConfig,
        render::{check_template, sample_context},
        site::SiteSettings,
        validate::{check_output, Validation, ValidationStatus},
    };

    fn sample_sites() -> Vec<SiteSettings> {
        let full = SiteSettings {
            timezone: "Europe/Berlin".into(),
            locale: "de_DE.UTF-8".into(),
            keyboard: "de".into(),
            ssh_authorized_keys: vec![
                "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG6cY0qg2b1yQ6m1f1v3kqHc0Xb2Yq9S0oSg3vJ7aL0x admin@lab".into(),
            ],
            has_root_password: true,
            root_password_hash: Some(crate::answers::site::hash_password("install-me-please").unwrap()),
            mirror: Some("http://mirror.lab:3142/debian".into()),
        };
        let bare = SiteSettings {
            timezone: "Etc/UTC".into(),
            locale: "en_US.UTF-8".into(),
            keyboard: "us".into(),
            ssh_authorized_keys: vec![],
            has_root_password: false,
            root_password_hash: None,
            mirror: None,
        };
        vec![full, bare]
    }

    /// Every preset renders with sample values (with and without the optional site
    /// values) and passes its format's validator; a validator that is not installed
    /// here is reported as a skip, never as a pass.
    #[tokio::test]
    async fn every_preset_renders_and_passes_its_validator() {
        let cfg = AnswersConfig::default();
        let mut skipped = Vec::new();
        for p in PRESETS {
            for site in sample_sites() {
                let (out, problems) = check_template(p.content, &sample_context(), &site.vars(), cfg.fuel);
                assert!(problems.is_empty(), "preset {}: {problems:?}", p.key);
                let out = out.unwrap();
                let v = Validation::new(problems, Some(check_output(p.format, &out, &cfg).await));
                match v.status {
                    ValidationStatus::Valid => {}
                    ValidationStatus::SyntaxCheckedOnly => {
                        skipped.push(format!("{}: {}", p.key, v.note.unwrap_or_default()))
                    }
                    ValidationStatus::Invalid => panic!("preset {} is refused: {:?}\n{out}", p.key, v.output_errors),
                }
                // The report-back hook is there, with the report URL as given.
                assert!(
                    out.contains(&format!("{}/", sample_context().task.report_url)),
                    "{}",
                    p.key
                );
                // The post-install bundle is pulled: the Unix or the Windows one.
                let ctx = sample_context();
                let bundle = if p.format == AnswerFormat::Autounattend {
                    ctx.task.baseline_ps1_url
                } else {
                    ctx.task.baseline_sh_url
                };
                assert!(
                    out.contains(&bundle) || out.contains(&bundle.replace('&', "&amp;")),
                    "preset {} does not call its post-install bundle",
                    p.key
                );
                // No secret in plain text: the sample password appears only hashed.
                assert!(!out.contains("install-me-please"), "{}", p.key);
            }
        }
        for s in &skipped {
            eprintln!("SKIPPED (validator not installed): {s}");
        }
    }

    #[test]
    fn the_debian_preset_is_what_the_installer_needs() {
        let site = &sample_sites()[0];
        let (out, problems) = check_template(
            find("debian").unwrap().content,
            &sample_context(),
            &site.vars(),
            200_000,
        );
        assert!(problems.is_empty(), "{problems:?}");
        let out = out.unwrap();
        let report = sample_context().task.report_url;
        for needle in [
            "d-i passwd/root-password-crypted password $6$".to_string(),
            "d-i mirror/http/hostname string mirror.lab:3142".into(),
            "d-i mirror/http/directory string /debian".into(),
            "d-i time/zone string Europe/Berlin".into(),
            "d-i partman-auto/choose_recipe select atomic".into(),
            format!(
                "d-i preseed/early_command string wget -q -O /dev/null '{report}/progress?stage=early_command' || true"
            ),
            format!("wget -q -O /dev/null '{report}/done?stage=late_command' || true"),
            "echo 'ssh-ed25519 AAAA".into(),
        ] {
            assert!(out.contains(&needle), "missing {needle:?} in\n{out}");
        }
        // Without a mirror: Debian's own.
        let (out, _) = check_template(
            find("debian").unwrap().content,
            &sample_context(),
            &sample_sites()[1].vars(),
            200_000,
        );
        assert!(out.unwrap().contains("d-i mirror/http/hostname string deb.debian.org"));
    }
}
