"""Tiny random Hugging Face models built from configs in seconds (no hub): they prove wiring, not quality."""

from pathlib import Path

WORDS = ("[PAD] [UNK] [CLS] [SEP] [MASK] who is the lead actor in dark knight christian bale heath ledger "
         "joker villain film cast answer : . , ? < > | / system user assistant").split()


def _write_vocab(folder: Path) -> Path:
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(WORDS) + "\n")
    return vocab


def tiny_cross_encoder(folder: Path) -> Path:
    """A 2-layer random BERT sequence classifier with 1 label, saved with its tokenizer."""
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = BertTokenizer(vocab_file=str(_write_vocab(folder)))
    config = BertConfig(vocab_size=len(WORDS), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=128, num_labels=1)
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def tiny_chat_model(folder: Path) -> Path:
    """A 2-layer random GPT-2 with a word-level tokenizer and a chat template, saved locally."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    vocab = {w: i for i, w in enumerate(WORDS)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                   eos_token="[SEP]", bos_token="[CLS]")
    fast.chat_template = ("{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} [SEP] {% endfor %}"
                          "{% if add_generation_prompt %}assistant : {% endif %}")
    fast.save_pretrained(folder)
    # 4096 positions: the graph extraction's and CDF-RAG's prompts run past 512 word tokens
    config = GPT2Config(vocab_size=len(WORDS), n_embd=16, n_layer=2, n_head=2, n_positions=4096,
                        bos_token_id=2, eos_token_id=3, pad_token_id=0)
    GPT2LMHeadModel(config).save_pretrained(folder)
    return folder


def tiny_sentence_embedder(folder: Path) -> Path:
    """A 2-layer random BERT with mean pooling and normalisation, saved as a sentence-transformers folder."""
    from sentence_transformers import SentenceTransformer, models
    from transformers import BertConfig, BertModel, BertTokenizer

    bert = folder / "bert"
    bert.mkdir(parents=True, exist_ok=True)
    BertTokenizer(vocab_file=str(_write_vocab(bert))).save_pretrained(bert)
    config = BertConfig(vocab_size=len(WORDS), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=512)
    BertModel(config).save_pretrained(bert)
    word = models.Transformer(str(bert), max_seq_length=256)
    pool = models.Pooling(config.hidden_size, pooling_mode="mean")
    SentenceTransformer(modules=[word, pool, models.Normalize()], device="cpu").save(str(folder))
    return folder
