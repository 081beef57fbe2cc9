// `daruma check` of daruma-topic-configs.json (recovery/topic_config_file.h),
// the per-log-dir topic config overrides. The broker reads the file leniently
// (a bad entry is dropped with a warning, an unreadable file ignored, and the
// topics concerned silently run on the broker defaults); check is strict, and
// reports, naming the file, the byte position and the key:
//  * a file that does not parse (JSON syntax, or `version`/`generation`/
//    `topics` missing or mistyped);
//  * an entry that is not an object, a value that is not a string;
//  * an unknown config name, a value Kafka's ConfigDef would reject;
//  * (across all checked dirs) an entry for a topic that has no partition
//    directory in any of them, e.g. left over from a deleted topic.
// Repair never rewrites the file: every problem is marked operator_only (an
// operator must edit the file), except a file that does not parse at all,
// which repair sets aside only within --max-corrupt-bytes, like any other
// dropped data (LogDirCheck::unreadable_topic_configs_bytes).
#pragma once

#include <string>
#include <vector>

#include "common/file_system.h"
#include "recovery/log_checker.h"

namespace daruma {

// Adds the file's problems to d->problems and its topics to
// d->topic_config_topics. No file, no problems.
void CheckTopicConfigsFile(FileSystem* fs, LogDirCheck* d);

// Entries for topics with no partition directory in any of `dirs`.
void CheckTopicConfigTopics(std::vector<LogDirCheck>* dirs);

// Where repair sets an unreadable file aside: a regular file next to it (a
// directory under a log dir would be parsed by Kafka as a partition).
std::string SetAsideTopicConfigsPath(FileSystem* fs, const std::string& log_dir);

}  // namespace daruma
