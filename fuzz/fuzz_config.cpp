// The training config: the YAML file, the --set overrides and validation, as `dragoman train
// --config FILE --set ...` reads them. Input: the YAML text, a NUL, then the overrides one a line.
// A config that loads must survive its own round trip: the YAML the trainer writes into the run
// directory (to_yaml of to_json) loads back to the same config, as a resumed run reads it.
// Seeds: fuzz/seeds/fuzz_config (configs/*.yaml with and without overrides).
#include "base/error.h"
#include "fuzz_common.h"
#include "train/config.h"

using namespace dragoman;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::quiet();
  const std::vector<std::string> parts = fuzz::split_parts(fuzz::as_text(data, size), 2);
  std::vector<std::string> overrides;
  std::string_view rest = parts[1];
  while (!rest.empty()) {
    const std::size_t end = std::min(rest.find('\n'), rest.size());
    overrides.emplace_back(rest.substr(0, end));
    rest.remove_prefix(std::min(end + 1, rest.size()));
  }
  const std::string path = fuzz::write_temp("config.yaml", parts[0]);
  try {
    train::TrainConfig config = train::TrainConfig::load(path, overrides);
    try {
      config.validate();
    } catch (const Error&) {
    }
    // As the trainer writes it: --set paths (relative to the working directory) made absolute,
    // so that the written file, read against its own directory, names the same files.
    config.make_paths_absolute();
    const nlohmann::json json = config.to_json();
    const std::string again = fuzz::write_temp("again.yaml", train::to_yaml(json));
    train::TrainConfig reloaded;
    try {
      reloaded = train::TrainConfig::load(again, {});
    } catch (const Error& e) {
      fuzz::fail(std::string("the written config does not load: ") + e.what() + "\n" + train::to_yaml(json));
    }
    if (reloaded.to_json() != json) {
      fuzz::fail("the written config loads differently:\n" + train::to_yaml(json) + "\nbecame\n" +
                 train::to_yaml(reloaded.to_json()));
    }
  } catch (const Error&) {
  }
  return 0;
}
