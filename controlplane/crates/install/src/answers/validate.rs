//! The second validation step: the rendered output judged by its format's own validator:
//! `xmllint --noout` for AutoYaST and autounattend, `cloud-init schema --annotate`
//! (Debian's package, unpacked) for cloud-config and Ubuntu autoinstall, `ksvalidator`
//! (pykickstart) for kickstart, `ignition-validate` for Ignition, and [`check_preseed`],
//! a parser of our own, for preseed (`debconf-set-selections -c` exits 0 on bad lines, so
//! it cannot judge). Validators run through [`tokio::process`] (never a shell) on a
//! temporary file, with a time limit. A validator that is not installed (or does not
//! finish) makes the answer [`ValidationStatus::SyntaxCheckedOnly`], never
//! [`ValidationStatus::Valid`]. No state.

use std::{path::Path, process::Stdio, time::Duration};

use serde::Serialize;
use utoipa::ToSchema;

use super::{config::AnswersConfig, render::Problem, AnswerFormat};

/// Overall verdict of a validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ValidationStatus {
    /// The template rendered and its format's validator accepted the output.
    Valid,
    /// The template or its output has problems (listed).
    Invalid,
    /// The template rendered, but no validator for its format could run here (the note
    /// says why): only the template was checked. Not a proof of validity.
    SyntaxCheckedOnly,
}

/// `POST /netboot/answer-templates/validate` (and `/{id}/validate`) answer: both steps.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Validation {
    /// The verdict.
    pub status: ValidationStatus,
    /// True only for [`ValidationStatus::Valid`].
    pub valid: bool,
    /// Step 1, the template: syntax, unknown variables, render errors (template lines).
    pub template_errors: Vec<Problem>,
    /// Step 2, the rendered output as the format's validator judged it (output lines).
    pub output_errors: Vec<Problem>,
    /// The validator that judged the output (`xmllint`, `cloud-init schema`,
    /// `ksvalidator`, `ignition-validate`, `preseed parser`), when one ran.
    pub validator: Option<String>,
    /// Why the output was not judged, when it was not.
    pub note: Option<String>,
}

/// What the output step found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputVerdict {
    /// The validator accepted it.
    Valid(&'static str),
    /// The validator refused it.
    Invalid(&'static str, Vec<Problem>),
    /// No validator could judge it; why.
    NotChecked(String),
}

impl Validation {
    /// Combines both steps.
    pub fn new(template_errors: Vec<Problem>, output: Option<OutputVerdict>) -> Self {
        let (status, output_errors, validator, note) = match (template_errors.is_empty(), output) {
            (false, _) | (true, None) => (ValidationStatus::Invalid, Vec::new(), None, None),
            (true, Some(OutputVerdict::Valid(v))) => (ValidationStatus::Valid, Vec::new(), Some(v.to_string()), None),
            (true, Some(OutputVerdict::Invalid(v, p))) => (ValidationStatus::Invalid, p, Some(v.to_string()), None),
            (true, Some(OutputVerdict::NotChecked(why))) => {
                (ValidationStatus::SyntaxCheckedOnly, Vec::new(), None, Some(why))
            }
        };
        Self {
            valid: status == ValidationStatus::Valid,
            status,
            template_errors,
            output_errors,
            validator,
            note,
        }
    }
}

/// The debconf question types a preseed line may use.
const PRESEED_TYPES: &[&str] = &[
    "string",
    "password",
    "boolean",
    "select",
    "multiselect",
    "note",
    "text",
    "title",
    "error",
    "seen",
];

/// Parses a preseed file as `debconf-set-selections` reads it: each logical line (a
/// trailing `\` joins the next) that is not blank or a `#` comment is `owner question
/// type [value]`; the owner is `d-i` or a package name, the question holds a `/`, the
/// type is a debconf type, a boolean is `true` or `false`.
pub fn check_preseed(text: &str) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut logical = String::new();
    let mut start = 0;
    let lines: Vec<&str> = text.lines().collect();
    for (i, raw) in lines.iter().enumerate() {
        if logical.is_empty() {
            start = i + 1;
        }
        let (content, more) = match raw.strip_suffix('\\') {
            Some(c) => (c, true),
            None => (*raw, false),
        };
        logical.push_str(content);
        if more && i + 1 < lines.len() {
            logical.push(' ');
            continue;
        }
        if more {
            problems.push(Problem::at(
                Some(start),
                "the last line ends with '\\' (a continuation of nothing)",
            ));
        }
        let line = std::mem::take(&mut logical);
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let mut words = t.split_whitespace();
        let owner = words.next().unwrap_or_default();
        let (Some(question), Some(kind)) = (words.next(), words.next()) else {
            problems.push(Problem::at(
                Some(start),
                format!("{t:?} is not 'owner question type value'"),
            ));
            continue;
        };
        let owner_ok = owner == "d-i"
            || (owner.len() > 1
                && owner
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+-.".contains(c)));
        if !owner_ok {
            problems.push(Problem::at(
                Some(start),
                format!("{owner:?} is not an owner (d-i or a package name)"),
            ));
        }
        if !question.contains('/') || question.starts_with('/') || question.ends_with('/') {
            problems.push(Problem::at(
                Some(start),
                format!("{question:?} is not a debconf question such as netcfg/get_hostname"),
            ));
        }
        if !PRESEED_TYPES.contains(&kind) {
            problems.push(Problem::at(
                Some(start),
                format!("unknown type {kind:?}; debconf types are {}", PRESEED_TYPES.join(", ")),
            ));
        }
        let value: Vec<&str> = words.collect();
        if kind == "boolean" && !matches!(value.as_slice(), ["true"] | ["false"]) {
            problems.push(Problem::at(
                Some(start),
                format!("boolean {question} must be true or false, not {:?}", value.join(" ")),
            ));
        }
    }
    problems
}

/// Finds a line number in a validator message: `<file>:N:` (xmllint), `line N`
/// (ksvalidator, ignition-validate, YAML errors), `format-lN.` (cloud-init).
fn line_in(msg: &str, file: &str) -> Option<usize> {
    let num = |s: &str| -> Option<usize> {
        let d: String = s.chars().take_while(char::is_ascii_digit).collect();
        d.parse().ok().filter(|&n| n > 0)
    };
    if let Some(rest) = msg.find(&format!("{file}:")).map(|i| &msg[i + file.len() + 1..]) {
        if let Some(n) = num(rest) {
            return Some(n);
        }
    }
    for pat in ["format-l", "line "] {
        if let Some(i) = msg.find(pat) {
            if let Some(n) = num(&msg[i + pat.len()..]) {
                return Some(n);
            }
        }
    }
    None
}

/// What a validator run gave: exit success, stdout, stderr.
struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// Runs `program args` with a time limit; `Err` says why it could not judge.
async fn run(program: &Path, args: &[&std::ffi::OsStr], env: &[(&str, &Path)], limit: Duration) -> Result<Run, String> {
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = cmd.spawn().map_err(|e| {
        format!(
            "{} could not be started ({e}); install it (scripts/setup.sh) or set its path in [answers]",
            program.display()
        )
    })?;
    match tokio::time::timeout(limit, child.wait_with_output()).await {
        Err(_) => Err(format!(
            "{} did not finish within {} s ([answers] validator_timeout_secs)",
            program.display(),
            limit.as_secs()
        )),
        Ok(Err(e)) => Err(format!("{} failed to run: {e}", program.display())),
        Ok(Ok(o)) => Ok(Run {
            ok: o.status.success(),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }),
    }
}

/// Cleans a validator's message: the temporary path becomes `answer`.
fn clean(msg: &str, path: &str) -> String {
    msg.replace(path, "answer").trim().to_string()
}

/// Messages of a failed run, one [`Problem`] per meaningful line or paragraph.
fn problems_of(text: &str, path: &str, file_name: &str) -> Vec<Problem> {
    let mut out: Vec<Problem> = Vec::new();
    for para in text.split("\n\n").map(str::trim).filter(|p| !p.is_empty()) {
        let para = clean(para, path);
        if para.starts_with("Checking kickstart file") || para == "^" {
            continue;
        }
        let line = line_in(&para, "answer").or_else(|| line_in(&para, file_name));
        // A paragraph that only introduces the next ("...occurred on line 2 ...:")
        // gives its line to the next one.
        if para.ends_with(':') && line.is_some() {
            out.push(Problem::at(line, para));
            continue;
        }
        match out.last_mut() {
            Some(last) if last.message.ends_with(':') => {
                last.message = format!("{} {para}", last.message);
            }
            _ => out.push(Problem::at(line, para)),
        }
    }
    if out.is_empty() {
        out.push(Problem::at(None, "the validator refused the output without a message"));
    }
    out
}

/// Parses `cloud-init schema --annotate` output: the annotated copy marks error lines
/// with `# E<n>` and lists the messages after `# Errors:`.
fn cloud_init_problems(stdout: &str) -> Option<Vec<Problem>> {
    let (annotated, errors) = stdout.split_once("# Errors:")?;
    let mut lines_of = std::collections::HashMap::new();
    for (i, l) in annotated.lines().enumerate() {
        if let Some((_, marks)) = l.rsplit_once("\t\t# ") {
            for m in marks.split(',') {
                lines_of.insert(m.trim().to_string(), i + 1);
            }
        }
    }
    let mut out: Vec<Problem> = Vec::new();
    for l in errors.lines() {
        if let Some((mark, msg)) = l.strip_prefix("# ").and_then(|r| r.split_once(": ")) {
            if mark.starts_with('E') || mark.starts_with('D') {
                out.push(Problem::at(lines_of.get(mark).copied(), msg.trim()));
                continue;
            }
        }
        if let (Some(last), false) = (out.last_mut(), l.trim().is_empty() || l.starts_with("# --")) {
            last.message = format!("{} {}", last.message, l.trim());
        }
    }
    Some(out)
}

/// Judges `output` of `format` with its validator.
pub async fn check_output(format: AnswerFormat, output: &str, cfg: &AnswersConfig) -> OutputVerdict {
    if format == AnswerFormat::Preseed {
        let p = check_preseed(output);
        return if p.is_empty() {
            OutputVerdict::Valid("preseed parser")
        } else {
            OutputVerdict::Invalid("preseed parser", p)
        };
    }
    let suffix = match format {
        AnswerFormat::Autoyast | AnswerFormat::Autounattend => ".xml",
        AnswerFormat::Ignition => ".ign",
        AnswerFormat::Kickstart => ".ks",
        _ => ".yaml",
    };
    let file = match tempfile::Builder::new()
        .prefix("bootlane-answer-")
        .suffix(suffix)
        .tempfile()
    {
        Ok(f) => f,
        Err(e) => return OutputVerdict::NotChecked(format!("no temporary file for the validator: {e}")),
    };
    if let Err(e) = std::fs::write(file.path(), output) {
        return OutputVerdict::NotChecked(format!("writing the temporary file failed: {e}"));
    }
    let path = file.path().to_path_buf();
    let path_s = path.display().to_string();
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let limit = Duration::from_secs(cfg.validator_timeout_secs);
    let p = path.as_os_str();
    match format {
        AnswerFormat::Autoyast | AnswerFormat::Autounattend => {
            match run(&cfg.xmllint, &["--noout".as_ref(), "--nonet".as_ref(), p], &[], limit).await {
                Err(why) => OutputVerdict::NotChecked(why),
                Ok(r) if r.ok => OutputVerdict::Valid("xmllint"),
                Ok(r) => OutputVerdict::Invalid("xmllint", problems_of(&(r.stderr + &r.stdout), &path_s, &file_name)),
            }
        }
        AnswerFormat::Kickstart => match run(&cfg.ksvalidator, &[p], &[], limit).await {
            Err(why) => OutputVerdict::NotChecked(why),
            Ok(r) if r.ok => OutputVerdict::Valid("ksvalidator"),
            Ok(r) => OutputVerdict::Invalid(
                "ksvalidator",
                problems_of(&(r.stdout + "\n\n" + &r.stderr), &path_s, &file_name),
            ),
        },
        AnswerFormat::Ignition => {
            let r = run(&cfg.ignition_validate, &[p], &[], limit).await;
            match r {
                Err(why) => {
                    // Still a JSON syntax check, which can refuse but never approve.
                    match serde_json::from_str::<serde_json::Value>(output) {
                        Err(e) => {
                            OutputVerdict::Invalid("JSON parser", vec![Problem::at(Some(e.line()), e.to_string())])
                        }
                        Ok(_) => OutputVerdict::NotChecked(why),
                    }
                }
                Ok(r) if r.ok => OutputVerdict::Valid("ignition-validate"),
                Ok(r) => OutputVerdict::Invalid(
                    "ignition-validate",
                    problems_of(&(r.stderr + "\n\n" + &r.stdout), &path_s, &file_name),
                ),
            }
        }
        AnswerFormat::Autoinstall | AnswerFormat::CloudConfig => {
            let bin = cfg.cloud_init_root.join("usr/bin/cloud-init");
            if !bin.is_file() {
                return OutputVerdict::NotChecked(format!(
                    "cloud-init is not unpacked at {} (scripts/setup.sh does it; [answers] cloud_init_root)",
                    cfg.cloud_init_root.display()
                ));
            }
            let pythonpath = cfg.cloud_init_root.join("usr/lib/python3/dist-packages");
            let args: [&std::ffi::OsStr; 5] = [
                bin.as_os_str(),
                "schema".as_ref(),
                "--annotate".as_ref(),
                "--config-file".as_ref(),
                p,
            ];
            match run(&cfg.python, &args, &[("PYTHONPATH", &pythonpath)], limit).await {
                Err(why) => OutputVerdict::NotChecked(why),
                Ok(r) => match cloud_init_problems(&r.stdout) {
                    Some(p) if !p.is_empty() => OutputVerdict::Invalid("cloud-init schema", p),
                    _ if r.ok && r.stdout.contains("Valid cloud-config") => OutputVerdict::Valid("cloud-init schema"),
                    _ if r.ok => OutputVerdict::Valid("cloud-init schema"),
                    _ => {
                        let text = r.stderr + "\n\n" + &r.stdout;
                        if text.contains("ModuleNotFoundError") || text.contains("No module named") {
                            return OutputVerdict::NotChecked(format!(
                                "cloud-init schema could not run: its Python modules are missing in {} (scripts/setup.sh)",
                                cfg.python.display()
                            ));
                        }
                        OutputVerdict::Invalid("cloud-init schema", problems_of(&text, &path_s, &file_name))
                    }
                },
            }
        }
        AnswerFormat::Preseed => unreachable!("handled above"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preseed_parser_reports_bad_lines_with_their_numbers() {
        let text = "# comment\n\nd-i netcfg/get_hostname string box\nd-i preseed/late_command string \\\n  echo a; \\\n  echo b\nd-i clock-setup/utc boolean yes\nd-i foo\nd-i mirror/x strng y\nBAD! q/x string v\nd-i noslash string v\n";
        let p = check_preseed(text);
        let lines: Vec<_> = p.iter().map(|p| p.line.unwrap()).collect();
        assert_eq!(lines, vec![7, 8, 9, 10, 11], "{p:?}");
        assert!(p[0].message.contains("true or false"));
        assert!(p[2].message.contains("unknown type \"strng\""));
        assert!(check_preseed("d-i a/b string\nd-i c/d boolean true\n").is_empty());
        assert_eq!(check_preseed("d-i a/b string x \\")[0].line, Some(1));
    }

    #[test]
    fn validator_messages_give_their_lines() {
        assert_eq!(line_in("answer:3: parser error : x", "answer"), Some(3));
        assert_eq!(
            line_in(
                "The following problem occurred on line 2 of the kickstart file:",
                "answer"
            ),
            Some(2)
        );
        assert_eq!(
            line_in(
                "Error at $.storage.files.0.path, line 2 col 33: path not absolute",
                "answer"
            ),
            Some(2)
        );
        assert_eq!(line_in("error at line 0 col 0: bad", "answer"), None);
        let out = "#cloud-config\nhostname: x\npackages: 5\t\t# E1\n\n# Errors: -------------\n# E1: 5 is not of type 'array'\n\n";
        assert_eq!(
            cloud_init_problems(out).unwrap(),
            vec![Problem::at(Some(3), "5 is not of type 'array'")]
        );
        let ks = "\nChecking kickstart file /tmp/x.ks\n\nThe following problem occurred on line 2 of the kickstart file:\n\nUnknown command: foo\n";
        let p = problems_of(ks, "/tmp/x.ks", "x.ks");
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(p[0].line, Some(2));
        assert!(p[0].message.contains("Unknown command: foo"));
    }

    #[tokio::test]
    async fn a_missing_validator_is_never_valid() {
        let cfg = AnswersConfig {
            xmllint: "/nonexistent/xmllint".into(),
            ignition_validate: "/nonexistent/ignition-validate".into(),
            cloud_init_root: "/nonexistent".into(),
            ..Default::default()
        };
        let v = check_output(AnswerFormat::Autoyast, "<a/>", &cfg).await;
        assert!(
            matches!(v, OutputVerdict::NotChecked(ref w) if w.contains("/nonexistent/xmllint")),
            "{v:?}"
        );
        assert_eq!(
            Validation::new(vec![], Some(v)).status,
            ValidationStatus::SyntaxCheckedOnly
        );
        assert!(matches!(
            check_output(AnswerFormat::CloudConfig, "#cloud-config\n", &cfg).await,
            OutputVerdict::NotChecked(_)
        ));
        // Without ignition-validate a JSON syntax error is still caught, with its line.
        match check_output(AnswerFormat::Ignition, "{\n\"a\": }", &cfg).await {
            OutputVerdict::Invalid(_, p) => assert_eq!(p[0].line, Some(2)),
            v => panic!("{v:?}"),
        }
    }

    #[tokio::test]
    async fn xmllint_refusals_carry_the_output_line() {
        let cfg = AnswersConfig::default();
        match check_output(
            AnswerFormat::Autounattend,
            "<?xml version=\"1.0\"?>\n<a>\n<b></a>\n",
            &cfg,
        )
        .await
        {
            OutputVerdict::NotChecked(why) => eprintln!("SKIPPED: xmllint is not installed here ({why})"),
            OutputVerdict::Invalid(v, p) => {
                assert_eq!(v, "xmllint");
                assert_eq!(p[0].line, Some(3), "{p:?}");
                assert!(!p[0].message.contains("/tmp/"), "{p:?}");
            }
            v => panic!("{v:?}"),
        }
    }
}
