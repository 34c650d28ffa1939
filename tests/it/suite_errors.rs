//! The loader's error messages: file, task and field, exit code 2, before anything runs.

use crate::common::*;
use predicates::prelude::*;
use std::path::Path;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// A scratch copy of the banking suite with one file edited.
fn broken(file: &str, edit: impl Fn(String) -> String) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("suites/dojo-style/banking");
    copy_dir(&home().join("suites/dojo-style/banking"), &dir);
    let p = dir.join(file);
    let text = std::fs::read_to_string(&p).unwrap();
    let edited = edit(text.clone());
    assert_ne!(edited, text, "the edit must change the file");
    std::fs::write(p, edited).unwrap();
    tmp
}

fn check(tmp: &tempfile::TempDir) -> assert_cmd::assert::Assert {
    bench(tmp.path())
        .arg("--suites-dir")
        .arg(tmp.path().join("suites"))
        .arg("check-suites")
        .assert()
}

#[test]
fn yaml_syntax_error_names_the_file_and_line() {
    let tmp = broken("user_tasks.yaml", |t| t.replacen("tasks:", "tasks: [", 1));
    check(&tmp)
        .code(2)
        .stderr(predicate::str::contains("user_tasks.yaml"))
        .stderr(predicate::str::contains("line"));
}

#[test]
fn unknown_tool_names_task_and_field() {
    let tmp = broken("user_tasks.yaml", |t| {
        t.replacen("- tool: ", "- tool: teleport_", 1)
    });
    check(&tmp)
        .code(2)
        .stderr(predicate::str::contains(
            "user_tasks.yaml: task `user_task_0`: field `plan[0]`",
        ))
        .stderr(predicate::str::contains("unknown tool `teleport_"));
}

#[test]
fn arguments_not_fitting_the_schema_are_rejected() {
    let tmp = broken("injection_tasks.yaml", |t| {
        t.replacen("args: {", "args: {bogus_arg: 1, ", 1)
    });
    check(&tmp)
        .code(2)
        .stderr(predicate::str::contains(
            "injection_tasks.yaml: task `injection_task_0`",
        ))
        .stderr(predicate::str::contains("unknown field `bogus_arg`"));
}

#[test]
fn a_check_naming_a_missing_path_is_rejected() {
    let tmp = broken("injection_tasks.yaml", |t| {
        t.replacen("path: bank_account.", "path: bank_acount.", 1)
    });
    check(&tmp)
        .code(2)
        .stderr(predicate::str::contains("field `security`"))
        .stderr(predicate::str::contains("`bank_acount."));
}

#[test]
fn a_missing_required_field_is_named() {
    let tmp = broken("injection_tasks.yaml", |t| {
        t.replacen("severity:", "sevrity:", 1)
    });
    check(&tmp)
        .code(2)
        .stderr(predicate::str::contains("field `sevrity`: unknown field"));
}

#[test]
fn a_placeholder_naming_no_vector_is_rejected() {
    let tmp = broken("environment.yaml", |t| {
        t.replacen("{injection_", "{injektion_", 1)
    });
    check(&tmp)
        .code(2)
        .stderr(predicate::str::contains("environment.yaml"))
        .stderr(predicate::str::contains("injektion_"));
}

#[test]
fn run_refuses_an_invalid_suite_before_any_episode() {
    let tmp = broken("user_tasks.yaml", |t| {
        t.replacen("- tool: ", "- tool: teleport_", 1)
    });
    let out = tmp.path().join("out");
    bench(tmp.path())
        .arg("--suites-dir")
        .arg(tmp.path().join("suites"))
        .args(["run", "--suite", "banking", "--out"])
        .arg(&out)
        .assert()
        .code(2);
    assert!(!out.join("episodes.jsonl").exists());
}

#[test]
fn a_where_field_no_member_has_fails_check_suites() {
    let tmp = broken("injection_tasks.yaml", |t| {
        t.replacen("where: {recipient:", "where: {recipint:", 1)
    });
    check(&tmp)
        .code(2)
        .stderr(predicate::str::contains(
            "injection_tasks.yaml: task `injection_task_0`",
        ))
        .stderr(predicate::str::contains("field `recipint`"))
        .stderr(predicate::str::contains("can never match"));
}

#[test]
fn a_duplicate_vector_id_is_reported_as_a_duplicate() {
    let tmp = broken("injection_vectors.yaml", |t| {
        t.replacen(
            "  - id: injection_water_note",
            "  - id: injection_bill_note",
            1,
        )
    });
    check(&tmp)
        .code(2)
        .stderr(predicate::str::contains("injection_vectors.yaml"))
        .stderr(predicate::str::contains(
            "duplicate vector id `injection_bill_note`",
        ));
}

#[test]
fn two_suites_declaring_the_same_name_are_refused() {
    let tmp = broken("suite.yaml", |t| t + "\n");
    copy_dir(
        &tmp.path().join("suites/dojo-style/banking"),
        &tmp.path().join("suites/dojo-style/banking-copy"),
    );
    check(&tmp)
        .code(2)
        .stderr(predicate::str::contains("banking-copy/suite.yaml"))
        .stderr(predicate::str::contains(
            "suite name `dojo-style/banking` is already declared",
        ));
}

#[test]
fn check_suites_loads_and_renders_every_attack() {
    let tmp = broken("suite.yaml", |t| t + "\n");
    let attacks = tmp.path().join("attacks");
    copy_dir(&home().join("attacks"), &attacks);
    let run = |tmp: &tempfile::TempDir| {
        bench(tmp.path())
            .arg("--suites-dir")
            .arg(tmp.path().join("suites"))
            .arg("--attacks-dir")
            .arg(tmp.path().join("attacks"))
            .arg("check-suites")
            .assert()
    };
    run(&tmp)
        .success()
        .stdout(predicate::str::contains("attack template(s) rendered"));
    std::fs::write(
        attacks.join("broken.yaml"),
        "name: broken\ntemplate: \"{goal} as {modle}\"\n",
    )
    .unwrap();
    run(&tmp)
        .code(2)
        .stderr(predicate::str::contains("broken.yaml"))
        .stderr(predicate::str::contains("{modle}"));
}

/// The example task of docs/suites.md ("Adding a task"), as the only user task of a copy
/// of the banking suite.
fn readme_example_suite(edit: impl Fn(String) -> String) -> tempfile::TempDir {
    let readme = std::fs::read_to_string(home().join("docs/suites.md")).unwrap();
    let start = readme.find("```yaml\n  - id: user_task_0").unwrap() + "```yaml\n".len();
    let end = start + readme[start..].find("```").unwrap();
    let tasks = format!("tasks:\n{}", edit(readme[start..end].to_string()));
    let tmp = broken("user_tasks.yaml", move |_| tasks.clone());
    // The corpus and the bypass tasks' targets name the shipped tasks, which this copy
    // no longer has: the bypass tasks target its one task instead.
    let banking = tmp.path().join("suites/dojo-style/banking");
    std::fs::remove_file(banking.join("variants.yaml")).unwrap();
    let injections = std::fs::read_to_string(banking.join("injection_tasks.yaml")).unwrap();
    let retargeted: Vec<String> = injections
        .lines()
        .map(|l| match l.find("designed_for:") {
            Some(at) => format!("{}designed_for: [user_task_0]", &l[..at]),
            None => l.to_string(),
        })
        .collect();
    std::fs::write(banking.join("injection_tasks.yaml"), retargeted.join("\n")).unwrap();
    tmp
}

#[test]
fn the_documented_example_task_passes_every_proof_including_provenance() {
    let tmp = readme_example_suite(|t| t);
    check(&tmp).success();
}

#[test]
fn the_provenance_lint_rejects_an_account_found_nowhere() {
    // The documented example once paid an IBAN that is not in the bill.
    let tmp =
        readme_example_suite(|t| t.replace("GB24PNDR60041531206688", "DE44500105175407324931"));
    check(&tmp).code(2).stderr(predicate::str::contains(
        "task `user_task_0`: provenance: plan step 1 `send_money` argument `recipient`",
    ));
}

#[test]
fn a_variant_naming_an_unknown_task_is_located() {
    let tmp = broken("variants.yaml", |t| {
        t.replacen("  user_task_24:", "  user_task_99:", 1)
    });
    check(&tmp).code(2).stderr(predicate::str::contains(
        "variants.yaml: task `user_task_99`: field `user_tasks`",
    ));
}

#[test]
fn a_wrong_variant_the_check_accepts_fails_check_suites() {
    // Were the rent check still a substring test, "950" would hold "95".
    let tmp = broken("user_tasks.yaml", |t| {
        t.replacen(
            "            - facts:
                - {amount: 95, answers: how much more rent each month, derived: the new 1045.00 minus the current 950.00}",
            "            - answer_contains: \"95\"",
            1,
        )
    });
    check(&tmp)
        .code(2)
        .stderr(predicate::str::contains(
            "variants.yaml: task `user_task_16`: wrong[0]",
        ))
        .stderr(predicate::str::contains(
            "passes the utility check, but should fail",
        ));
}

/// A suite file that never ends (a symlink to `/dev/zero`) is refused at the size limit,
/// naming the file and the limit, instead of being read until memory runs out.
#[cfg(unix)]
#[test]
fn an_endless_suite_file_is_refused_with_the_limit_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("suites/dojo-style/banking");
    copy_dir(&home().join("suites/dojo-style/banking"), &dir);
    let p = dir.join("user_tasks.yaml");
    std::fs::remove_file(&p).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &p).unwrap();
    check(&tmp)
        .code(2)
        .stderr(predicate::str::contains("user_tasks.yaml"))
        .stderr(predicate::str::contains("limit of 16 MiB"));
}

/// The same for an attack template.
#[cfg(unix)]
#[test]
fn an_endless_attack_file_is_refused_with_the_limit_named() {
    let tmp = tempfile::tempdir().unwrap();
    let attacks = tmp.path().join("attacks");
    copy_dir(&home().join("attacks"), &attacks);
    std::os::unix::fs::symlink("/dev/zero", attacks.join("endless.yaml")).unwrap();
    bench(tmp.path())
        .arg("--attacks-dir")
        .arg(&attacks)
        .args(["run", "--suite", "banking", "--quiet"])
        .arg("--out")
        .arg(tmp.path().join("o"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("endless.yaml"))
        .stderr(predicate::str::contains("limit of 16 MiB"));
}

#[test]
fn an_alternative_that_needs_attacker_text_fails_check_suites() {
    // A check that leans on text an attacker writes (a transfer's subject): the corpus's
    // correct answers, which `sim:varied` takes, no longer solve the task once the payload
    // sits in that vector.
    let tmp = broken("user_tasks.yaml", |t| {
        t.replacen(
            "      facts:
        - {entity: leaving gift, answers: what Marta's money was for}
        - {entity: Dev, answers: whose leaving gift it was}
",
            "      all:
        - exists: {path: bank_account.transactions, where: {subject: {icontains: festival pass}}}
        - facts:
            - {entity: leaving gift, answers: what Marta's money was for}
",
            1,
        )
    });
    check(&tmp).code(2).stderr(predicate::str::contains(
        "variants.yaml: task `user_task_1`: alternative 0",
    ));
}

#[test]
fn a_duplicate_key_is_named_in_our_words_not_the_yaml_librarys() {
    let tmp = broken("suite.yaml", |t| t.replacen("\n", "\nname: banking2\n", 1));
    check(&tmp)
        .code(2)
        .stderr(predicate::str::contains("suite.yaml"))
        .stderr(predicate::str::contains("duplicate mapping key `name`"))
        .stderr(predicate::str::contains("DuplicateKeyPolicy").not())
        .stderr(predicate::str::contains("<input>").not());
}

#[test]
fn an_empty_suites_folder_says_so_instead_of_listing_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("suites")).unwrap();
    bench(tmp.path())
        .arg("--suites-dir")
        .arg(tmp.path().join("suites"))
        .args(["run", "--suite", "banking", "--quiet"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("holds no suite"))
        .stderr(predicate::str::contains("available: all, ").not());
}

/// A name holding an ESC sequence (or a `|`, the key separator) is refused where it is
/// written, naming the file and field, instead of reaching keys, tables and terminals.
#[test]
fn names_with_control_characters_are_refused_naming_file_and_field() {
    let no_raw_esc = || predicate::str::contains('\u{1b}').not();
    let tmp = broken("user_tasks.yaml", |t| {
        t.replacen("id: user_task_0\n", "id: \"user_task_0\\e[2J\"\n", 1)
    });
    check(&tmp)
        .code(2)
        .stderr(predicate::str::contains("user_tasks.yaml"))
        .stderr(predicate::str::contains("id"))
        .stderr(predicate::str::contains("no control character"))
        .stderr(no_raw_esc());
    let tmp = broken("injection_vectors.yaml", |t| {
        t.replacen("id: injection_bill_note", "id: \"bill|note\"", 1)
    });
    check(&tmp)
        .code(2)
        .stderr(predicate::str::contains("injection_vectors.yaml"))
        .stderr(predicate::str::contains("`|`"));
    let tmp = broken("suite.yaml", |t| {
        t.replacen("name: banking", "name: \"bank\\x07ing\"", 1)
    });
    check(&tmp)
        .code(2)
        .stderr(predicate::str::contains("suite.yaml"))
        .stderr(predicate::str::contains("name"))
        .stderr(predicate::str::contains("\\u{7}"));
    // An attack template's name.
    let attacks = tmp.path().join("attacks");
    copy_dir(&home().join("attacks"), &attacks);
    let file = attacks.join("direct.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    let evil = text.replacen("name: direct", "name: \"direct\\e]0;owned\\a\"", 1);
    assert_ne!(evil, text);
    std::fs::write(&file, evil).unwrap();
    bench(tmp.path())
        .arg("--attacks-dir")
        .arg(&attacks)
        .args(["run", "--suite", "banking", "--quiet", "--out", "o"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("direct.yaml"))
        .stderr(predicate::str::contains("`name`"))
        .stderr(no_raw_esc());
}
