//! One integration test target driving the real `reclaim` binary: real worker processes, real
//! SQLite files in temporary folders, real signals. Each module covers one command family.

mod captions;
mod common;
mod docs;
mod exec;
mod export;
mod faults;
mod fuzz;
mod heartbeat_check;
mod hostile;
mod kill_rows;
mod lecture;
mod map;
mod module_graph;
mod own_points;
mod own_queue;
mod png;
mod pty;
mod refuse;
mod replay;
mod robust;
mod run;
mod scenario_record;
mod slide_pixels;
mod stops;
mod suspend;
mod tui;
mod vendor;
mod verdicts;
mod warehouse_pg;
mod worker;
