// Hercule's knowledge base as data: the built-in files parse, errors name file:line:col,
// the inference walks the tree level by level (pipeline/knowledge/knowledge_base.h).
#include <gtest/gtest.h>

#include "config/schema.h"
#include "pipeline/knowledge/knowledge_base.h"

using namespace perfsift::pipeline;

TEST(KnowledgeBase, BuiltInModelsParse) {
  EXPECT_EQ(load_knowledge("master-worker", "", master_worker_metrics()).nodes.size(), 7u);
  EXPECT_EQ(load_knowledge("wavefront", "", wavefront_metrics()).model, "wavefront");
  EXPECT_EQ(load_knowledge("divide-and-conquer", "", divide_and_conquer_metrics()).events.size(), 4u);
}

TEST(KnowledgeBase, ErrorsNameTheFileLineAndFix) {
  const std::vector<std::string> known = {"efficiency", "t_wait"};
  auto error = [&](const std::string &text) {
    try {
      parse_knowledge(text, "kb.toml", known);
    } catch (const perfsift::config::ConfigError &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string head = "model = \"m\"\nsymptom = \"s\"\n[[metrics]]\nid = \"efficiency\"\n";
  EXPECT_EQ(error(head + "[[nodes]]\nid = \"a\"\nmetric = \"efficiency\"\ntxt = \"x\"\n"),
            "kb.toml:8:7: unknown key 'txt' in [[nodes]] (did you mean 'text'?)");
  EXPECT_NE(error("model = \"m\"\nsymptom = \"s\"\n[[metrics]]\nid = \"t_idle\"\n")
                .find("kb.toml:4:6: perfsift cannot compute metric 't_idle'"),
            std::string::npos);
  EXPECT_NE(error(head + "[[nodes]]\nid = \"a\"\nmetric = \"t_wait\"\ntext = \"x\"\n")
                .find("uses metric 't_wait', not defined in [[metrics]]"),
            std::string::npos);
  EXPECT_NE(error(head + "[[nodes]]\nid = \"a\"\nmetric = \"efficiency\"\ntext = \"x\"\n[[nodes]]\nid = \"b\"\nparent "
                         "= \"z\"\nmetric = \"efficiency\"\ntext = \"y\"\n")
                .find("node 'b' has parent 'z', not defined before it"),
            std::string::npos);
  EXPECT_NE(error("model = \"m\"\nsymptom = \"s\"\n").find("no [[nodes]]"), std::string::npos);
}

TEST(KnowledgeBase, InferenceWalksLevelByLevel) {
  const std::string text = R"KB(model = "m"
symptom = "slow"
[[metrics]]
id = "efficiency"
[[metrics]]
id = "t_wait"
[[metrics]]
id = "t_a"
[[metrics]]
id = "t_b"
[[nodes]]
id = "root"
metric = "efficiency"
experiment = "look at {who}"
text = "{who} is slow ({eff})."
[[nodes]]
id = "wait"
parent = "root"
level = 2
metric = "t_wait"
text = "waiting {share}"
[[nodes]]
id = "a"
parent = "wait"
level = 3
metric = "t_a"
cause = true
text = "a {share} ({seconds})"
[[nodes]]
id = "b"
parent = "wait"
level = 3
metric = "t_b"
cause = true
threshold = 0.3
text = "b {share}"
)KB";
  const auto kb = parse_knowledge(text, "t.toml", {"efficiency", "t_wait", "t_a", "t_b"});
  const auto inf = infer(kb, {{"efficiency", 0.4}, {"t_wait", 0.9}, {"t_a", 0.7}, {"t_b", 0.2}}, {{"t_a", 0.07}},
                         {{"who", "worker 3"}, {"eff", "0.400"}}, "m");
  ASSERT_EQ(inf.fired.size(), 3u);  // b is below its threshold
  EXPECT_EQ(inf.fired[0].text, "worker 3 is slow (0.400).");
  EXPECT_EQ(inf.fired[1].text, "waiting 90%");
  EXPECT_EQ(inf.fired[2].text, "a 70% (70.0 ms)");
  EXPECT_NE(inf.narrative.find("Level 1 experiment - look at worker 3.\n"), std::string::npos);
  EXPECT_NE(inf.narrative.find("Diagnosing finished..."), std::string::npos);
  // Nothing waits: level 3 is never reached.
  const auto none = infer(kb, {{"efficiency", 1.0}, {"t_wait", 0}, {"t_a", 0.7}}, {}, {}, "m");
  EXPECT_EQ(none.fired.size(), 1u);
}
