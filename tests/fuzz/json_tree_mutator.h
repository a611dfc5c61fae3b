// One structural edit of a JSON document, for the fuzz targets and the
// hostile-input campaign: a value replaced by an edge case of its kind (0, -1,
// 2^63-1, 1e308, a denormal, an empty or overlong string, control characters,
// a special file path), by another type or by a copy of another subtree; a
// key dropped, misspelled, or added from the document's own keys; a list
// element dropped or repeated, the list emptied, reversed or grown. Mutants
// stay parseable, so they reach the checks behind the parser. The same `seed`
// makes the same edit.
#pragma once

#include <nlohmann/json.hpp>

namespace shardlab::fuzz {

void MutateJsonTree(nlohmann::json& doc, unsigned seed);

}  // namespace shardlab::fuzz
