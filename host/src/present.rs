//! Presentation: what a run's typed results become for a reader. Terminal tables, the report
//! sections and their record (`--json`, `--report DIR`) with the lessons' charts, and the files the user asked
//! for, checked before any work. Nothing here touches the GPU.

pub mod output;
pub mod peer_report;
pub mod record_check;
pub mod report;
pub mod report_dir;
pub mod table;
