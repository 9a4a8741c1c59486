// The subcommands of `dragoman`. Each add_* function declares its subcommand's options on `app`
// and returns it with the function that runs it once the command line is parsed. A subcommand is
// registered here only once it works.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace dragoman::cli {

// A registered subcommand and the function that runs it; it returns the process's exit code
// (errors are thrown as dragoman::Error and reported by main with code 1).
struct Subcommand {
  CLI::App* app;
  std::function<int()> run;
};

Subcommand add_average_checkpoints(CLI::App& app);
Subcommand add_build_shortlist(CLI::App& app);
Subcommand add_build_vocab(CLI::App& app);
Subcommand add_convert(CLI::App& app);
Subcommand add_decoding_defaults(CLI::App& app);
Subcommand add_score(CLI::App& app);
Subcommand add_score_bleu(CLI::App& app);
Subcommand add_serve(CLI::App& app);
Subcommand add_train(CLI::App& app);
Subcommand add_translate(CLI::App& app);

}  // namespace dragoman::cli
