//! Whether a run uses the settings of the folder it starts in (`.mcp.json`, `.cove/`):
//! trusted before as they are now, trusted by the caller (remembered), or a yes from the
//! person when the front end can ask. Otherwise they are left out, and said so.

use crate::trust::{self, ProjectSettings};

use super::Notice;

/// Whether runs use the current folder's own settings, as they are now (settings changed
/// since they were trusted are not). `trusted_by_caller` trusts them (and remembers it);
/// `ask` asks the person when the front end can (none: it cannot).
pub fn project_trust(
    trusted_by_caller: bool,
    ask: impl FnOnce(&ProjectSettings) -> Option<bool>,
) -> (bool, Option<Notice>) {
    let Some(settings) = trust::project_settings(&trust::project_dir()) else {
        return (true, None);
    };
    let store = trust::store_path();
    if trust::is_trusted(&settings, &store) {
        return (true, None);
    }
    if trusted_by_caller || ask(&settings) == Some(true) {
        let note = trust::remember(&settings, &store).err().map(|e| {
            Notice::Note(format!(
                "cannot remember the trust in {} ({e}): it is used this time only",
                settings.dir.display()
            ))
        });
        return (true, note);
    }
    (
        false,
        Some(Notice::Warning(format!(
            "{} has settings of its own ({}) that run commands on this machine or instruct the agent; they were left out. Read them, then run again with --trust to use them (remembered until they change)",
            settings.dir.display(),
            settings.files.join(", ")
        ))),
    )
}
