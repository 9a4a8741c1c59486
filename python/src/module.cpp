// The extension module dragoman._core: the classes and functions python/dragoman/__init__.py
// wraps with keyword signatures and documentation. Library errors (dragoman::Error: a missing or
// malformed file, a line that is not UTF-8) are raised as dragoman.Error, option values out of
// range as ValueError.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "base/error.h"
#include "metrics.h"
#include "ops/build_info.h"
#include "options.h"
#include "translator.h"

namespace py = pybind11;
using namespace dragoman;

PYBIND11_MODULE(_core, m) {
  m.doc() = "Dragoman's library: translation, force scoring and BLEU (use the dragoman package)";
  py::register_exception<Error>(m, "Error", PyExc_RuntimeError);
  m.attr("__version__") = ops::version();
  m.def("build_info", &ops::build_info, "What this build runs: the text of `dragoman --version`");
  m.def("default_options", &python::default_options);

  py::class_<python::Translator>(m, "Translator")
      .def(py::init<const std::vector<std::string>&, const std::string&, const std::string&, int, const std::string&,
                    bool>(),
           py::arg("files"), py::arg("device"), py::arg("precision"), py::arg("threads"), py::arg("shortlist"),
           py::arg("deterministic"))
      .def("translate_batch", &python::Translator::translate_batch, py::arg("sentences"), py::arg("options"))
      .def("translate_file", &python::Translator::translate_file, py::arg("input"), py::arg("output"),
           py::arg("options"))
      .def("info", &python::Translator::info);

  py::class_<python::Scorer>(m, "Scorer")
      .def(py::init<const std::vector<std::string>&, const std::string&, const std::string&, int>(), py::arg("files"),
           py::arg("device"), py::arg("precision"), py::arg("threads"))
      .def("score", &python::Scorer::score, py::arg("sources"), py::arg("targets"), py::arg("normalize"),
           py::arg("batch_tokens"), py::arg("batch_sentences"))
      .def("info", &python::Scorer::info);

  m.def("corpus_bleu", &python::corpus_bleu, py::arg("hypotheses"), py::arg("references"), py::arg("tokenize"),
        py::arg("lowercase"), py::arg("smooth_method"), py::arg("smooth_value"), py::arg("threads"));
  m.def("corpus_chrf", &python::corpus_chrf, py::arg("hypotheses"), py::arg("references"), py::arg("char_order"),
        py::arg("word_order"), py::arg("beta"), py::arg("lowercase"), py::arg("whitespace"), py::arg("eps_smoothing"),
        py::arg("threads"));
  m.def("paper_bleu", &python::paper_bleu, py::arg("hypotheses"), py::arg("references"), py::arg("lang"),
        py::arg("split_compounds"), py::arg("normalize_punctuation"), py::arg("aggressive_dashes"), py::arg("threads"));
}
