//! The iPXE, GRUB and PXELINUX menu renderers and the built-in answer-file presets with
//! hostile field values. Values are generated freely, then put through the same
//! validation the API applies (profile and menu rules, host names, the site settings'
//! checks); whatever passes is rendered, and no value may add a command:
//! - iPXE: the script, split as iPXE's `exec.c` splits it, holds exactly the commands
//!   the template makes for these entries (names and counts), options only where the
//!   template puts them, and `${...}` only in `goto ${target}` and kernel command lines;
//! - GRUB: every quote closes, no `;`, `|`, `&`, `<`, `>` and no `$` GRUB would expand,
//!   only the commands the renderer writes, one `{ }` block per `menuentry`;
//! - PXELINUX: only its own keywords start a line, one `LABEL` per runnable entry;
//! - answer files: the hostile render has the same line count (and for XML the same
//!   number of `<`, for Ignition the same JSON validity) as a render of the same shape
//!   with harmless values, so no value opened a line, element or directive of its own.
#![no_main]

use bootlane::{
    answers::{
        presets::PRESETS,
        render::{render, sample_context},
        site::{check_hash, check_keyboard, check_locale, check_mirror, check_ssh_key, check_timezone, SiteSettings},
    },
    boot::{
        catalog::{
            profile_name, render as ipxe_render, validate_menu, EntryType, MenuEntry, Profile, ProfileMenu,
            ScriptContext,
        },
        grub, pxelinux, DEFAULT_SCRIPT,
    },
    net::types::{validate_hostname, MacAddr},
};
use bootlane_fuzz::{grub_tokens, ipxe_commands, GrubToken};
use libfuzzer_sys::{arbitrary, fuzz_target};

#[derive(arbitrary::Arbitrary, Debug)]
struct Entry {
    label: String,
    kind: u8,
    kernel: Option<String>,
    initrds: Vec<String>,
    cmdline: Option<String>,
    url: Option<String>,
    is_default: bool,
}

#[derive(arbitrary::Arbitrary, Debug)]
struct Input {
    name: String,
    host: Option<String>,
    timeout_secs: u16,
    entries: Vec<Entry>,
    mac: [u8; 6],
    timezone: String,
    locale: String,
    keyboard: String,
    ssh_keys: Vec<String>,
    hash: Option<String>,
    mirror: Option<String>,
}

const KINDS: [EntryType; 4] = [EntryType::Local, EntryType::Linux, EntryType::Chain, EntryType::Sanboot];

fn profile(input: &Input) -> Option<Profile> {
    let name = profile_name(&input.name).ok()?;
    let entries: Vec<MenuEntry> = input
        .entries
        .iter()
        .take(8)
        .map(|e| MenuEntry {
            label: e.label.clone(),
            // Custom entries are pasted into the script as they are, by design.
            kind: KINDS[usize::from(e.kind) % KINDS.len()],
            kernel: e.kernel.clone(),
            initrds: e.initrds.iter().take(3).cloned().collect(),
            cmdline: e.cmdline.clone(),
            url: e.url.clone(),
            script: None,
            is_default: e.is_default,
        })
        .collect();
    let menu = ProfileMenu {
        timeout_secs: u32::from(input.timeout_secs),
        entries,
    };
    validate_menu(&menu).ok()?;
    Some(Profile {
        id: 1,
        name,
        description: String::new(),
        is_default: false,
        timeout_secs: menu.timeout_secs,
        entries: menu.entries,
        baseline_id: None,
        created_at: time::OffsetDateTime::UNIX_EPOCH,
        updated_at: time::OffsetDateTime::UNIX_EPOCH,
    })
}

fn count(p: &Profile, kind: EntryType) -> usize {
    p.entries.iter().filter(|e| e.kind == kind).count()
}

fn check_ipxe(p: &Profile, script: &str) {
    assert!(script.starts_with("#!ipxe\n"), "shebang");
    let cmds = ipxe_commands(script);
    let mut seen = std::collections::BTreeMap::<&str, usize>::new();
    for (line, words) in &cmds {
        let name = words[0];
        *seen
            .entry(if name.starts_with(':') { ":label" } else { name })
            .or_default() += 1;
        let allowed = [
            "echo", "menu", "item", "choose", "goto", "exit", "kernel", "initrd", "boot", "chain", "sanboot",
        ];
        assert!(
            allowed.contains(&name) || (name.starts_with(':') && words.len() == 1),
            "line {line}: command {name:?} is not one the template writes: {words:?}\n{script}"
        );
        for w in &words[1..] {
            if w.starts_with('-') && w.len() > 1 {
                assert!(
                    (name == "item" && *w == "--gap") || (name == "choose" && matches!(*w, "--timeout" | "--default")),
                    "line {line}: option {w:?} in {words:?}"
                );
            }
            if w.contains('$') {
                assert!(
                    (name == "goto" && *w == "${target}") || name == "kernel",
                    "line {line}: a setting expanded in {words:?}"
                );
            }
        }
    }
    let n = p.entries.len();
    let (linux, local) = (count(p, EntryType::Linux), count(p, EntryType::Local));
    let initrds: usize = p
        .entries
        .iter()
        .filter(|e| e.kind == EntryType::Linux)
        .map(|e| e.initrds.len())
        .sum();
    let want = [
        ("echo", 1 + local),
        ("menu", 1),
        ("item", n + 1),
        ("choose", 1),
        ("goto", 2),
        (":label", n),
        ("exit", local),
        ("kernel", linux),
        ("initrd", initrds),
        ("boot", linux),
        ("chain", count(p, EntryType::Chain)),
        ("sanboot", count(p, EntryType::Sanboot)),
    ];
    for (name, k) in want {
        assert_eq!(
            seen.get(name).copied().unwrap_or(0),
            k,
            "number of {name} commands\n{script}"
        );
    }
}

fn check_grub(p: &Profile, cfg: &str) {
    let tokens = grub_tokens(cfg).unwrap_or_else(|e| panic!("{e}\n{cfg}"));
    let mut commands: Vec<Vec<&GrubToken>> = vec![Vec::new()];
    for t in &tokens {
        match t {
            GrubToken::Op('\n') => commands.push(Vec::new()),
            GrubToken::Op(c @ (';' | '|' | '&' | '<' | '>')) => panic!("GRUB operator {c:?} in\n{cfg}"),
            GrubToken::Word { text, expands: true } => panic!("GRUB would expand {text:?} in\n{cfg}"),
            t => commands.last_mut().expect("a command").push(t),
        }
    }
    let (mut entries, mut opens, mut closes) = (0, 0, 0);
    for c in commands.iter().filter(|c| !c.is_empty()) {
        match c[0] {
            GrubToken::Op('}') => {
                closes += 1;
                assert_eq!(c.len(), 1, "`}}` alone on its line: {c:?}");
            }
            GrubToken::Word { text, .. } => {
                let allowed = ["set", "echo", "menuentry", "linux", "initrd", "chainloader", "exit"];
                assert!(
                    allowed.contains(&text.as_str()),
                    "command {text:?} is not one the renderer writes: {c:?}\n{cfg}"
                );
                if text == "menuentry" {
                    entries += 1;
                }
                opens += c.iter().filter(|t| matches!(t, GrubToken::Op('{'))).count();
                assert!(
                    !c[1..].iter().any(|t| matches!(t, GrubToken::Op('}'))),
                    "`}}` inside {c:?}"
                );
            }
            GrubToken::Op(o) => panic!("a command starting with {o:?}"),
        }
    }
    assert_eq!(opens, entries, "one `{{` per menuentry\n{cfg}");
    assert_eq!(closes, entries, "one `}}` per menuentry\n{cfg}");
    assert!(
        entries <= p.entries.len() + 1,
        "more menu entries than the profile has\n{cfg}"
    );
}

fn check_pxelinux(p: &Profile, cfg: &str) {
    let mut labels = 0;
    for line in cfg.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if first.is_empty() || first.starts_with('#') {
            continue;
        }
        let allowed = [
            "UI",
            "MENU",
            "PROMPT",
            "TIMEOUT",
            "DEFAULT",
            "LABEL",
            "LINUX",
            "APPEND",
            "LOCALBOOT",
        ];
        assert!(
            allowed.contains(&first),
            "PXELINUX line starts with {first:?}: {line:?}\n{cfg}"
        );
        labels += usize::from(first == "LABEL");
    }
    assert!(labels <= p.entries.len() + 1, "more LABELs than entries\n{cfg}");
}

fn site(input: &Input) -> Option<SiteSettings> {
    check_timezone(&input.timezone).ok()?;
    check_locale(&input.locale).ok()?;
    check_keyboard(&input.keyboard).ok()?;
    let keys: Vec<String> = input.ssh_keys.iter().take(3).cloned().collect();
    for k in &keys {
        check_ssh_key(k).ok()?;
    }
    if let Some(h) = &input.hash {
        check_hash(h).ok()?;
    }
    if let Some(m) = &input.mirror {
        check_mirror(m).ok()?;
    }
    Some(SiteSettings {
        timezone: input.timezone.clone(),
        locale: input.locale.clone(),
        keyboard: input.keyboard.clone(),
        ssh_authorized_keys: keys,
        has_root_password: input.hash.is_some(),
        root_password_hash: input.hash.clone(),
        mirror: input.mirror.clone(),
    })
}

/// The same shape as `s` (options, list lengths, the language's length class) with
/// harmless values.
fn harmless(s: &SiteSettings) -> SiteSettings {
    let long_language = s.locale.split(['.', '@']).next().unwrap_or_default().len() >= 5;
    SiteSettings {
        timezone: "UTC".into(),
        locale: if long_language { "en_US.UTF-8" } else { "C" }.into(),
        keyboard: "us".into(),
        ssh_authorized_keys: (0..s.ssh_authorized_keys.len())
            .map(|i| format!("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBenign{i} k{i}"))
            .collect(),
        has_root_password: s.has_root_password,
        root_password_hash: s.root_password_hash.as_ref().map(|_| "$6$salt$hash".into()),
        mirror: s.mirror.as_ref().map(|_| "http://mirror.example/debian".into()),
    }
}

fn check_answers(host: &str, s: &SiteSettings) {
    let mut ctx = sample_context();
    ctx.host.name = host.to_string();
    let mut plain_ctx = sample_context();
    plain_ctx.host.name = "host".into();
    let (vars, plain) = (s.vars(), harmless(s).vars());
    for p in PRESETS {
        let hostile = render(p.content, &ctx, &vars, 1_000_000);
        let benign = render(p.content, &plain_ctx, &plain, 1_000_000).expect("a preset renders harmless values");
        let Ok(hostile) = hostile else {
            continue;
        };
        assert_eq!(
            hostile.lines().count(),
            benign.lines().count(),
            "preset {}: a value changed the number of lines\n{hostile}",
            p.key
        );
        assert_eq!(
            hostile.matches('<').count(),
            benign.matches('<').count(),
            "preset {}: a value added markup\n{hostile}",
            p.key
        );
        if p.key.contains("fcos") || p.content.trim_start().starts_with('{') {
            assert_eq!(
                serde_json::from_str::<serde_json::Value>(&hostile).is_ok(),
                serde_json::from_str::<serde_json::Value>(&benign).is_ok(),
                "preset {}: a value broke the JSON\n{hostile}",
                p.key
            );
        }
    }
}

fuzz_target!(|input: Input| {
    let host = input.host.as_deref().filter(|h| validate_hostname(h).is_ok());
    if let Some(p) = profile(&input) {
        let mac = MacAddr(input.mac);
        let ctx = ScriptContext::new(&p, &mac.to_string(), "10.77.0.1:8080", host);
        let script = ipxe_render(DEFAULT_SCRIPT, &ctx).expect("the built-in template renders");
        check_ipxe(&p, &script);
        let base = "http://10.77.0.1:8080";
        check_grub(&p, &grub::render(&p, Some(mac), host, base));
        check_pxelinux(&p, &pxelinux::render(&p, Some(mac), host, base));
    }
    if let Some(s) = site(&input) {
        check_answers(host.unwrap_or("node1"), &s);
    }
});
